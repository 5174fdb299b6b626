"""Deterministic, seeded demo graphs shaped like GRBench's text-attributed domains.

Three domains (``DEMO_DOMAINS``), each heterogeneous and text-attributed:

``academic``   (like GRBench DBLP / MAPLE)
    ``Author(name, organization, h_index)``, ``Paper(title, year, abstract, keywords)``,
    ``Venue(name, kind, topic)``;
    ``(Author)-[:WROTE {position}]->(Paper)``, ``(Paper)-[:CITES]->(Paper)`` (no self-citations,
    a paper cites only papers of the same or an earlier year), ``(Paper)-[:PUBLISHED_IN]->(Venue)``
    (exactly one venue per paper).
``ecommerce``  (like GRBench Amazon)
    ``Item(title, price, description, category, rating, review_count, in_stock,
    first_available)``, ``Brand(name, country, founded, category)``;
    ``(Item)-[:MADE_BY]->(Brand)`` (exactly one brand per item), ``(Item)-[:ALSO_BOUGHT]->(Item)``,
    ``(Item)-[:ALSO_VIEWED]->(Item)``, ``(Item)-[:BOUGHT_TOGETHER]->(Item)`` (a symmetric relation
    stored once per pair, in a random direction). Co-purchases favour the same category.
``biomedical`` (like GRBench's Hetionet graph)
    ``Compound(name, drug_class, molecular_weight, approved, description)``,
    ``Disease(name, category, icd10, description)``, ``Gene(symbol, name, chromosome,
    description)``, ``Symptom(name, body_system, description)``;
    ``(Compound)-[:TREATS]->(Disease)``, ``(Disease)-[:ASSOCIATES]->(Gene)``,
    ``(Disease)-[:PRESENTS]->(Symptom)``, ``(Compound)-[:BINDS {affinity}]->(Gene)``,
    ``(Gene)-[:INTERACTS_WITH]->(Gene)`` (symmetric: once per pair, random direction).

Every node has a string ``id`` (``paper_17``); names and titles are unique within a label (repeats
get a DBLP-style suffix, ``Wei Zhang 0002``). Degrees are skewed: endpoint popularity follows a
power law over a random ranking of the nodes, so a few nodes are hubs. No two relationships of the
same type join the same ordered pair (for symmetric types: the same unordered pair), and there are
no self-loops.

**Scale.** ``scale`` is the approximate total number of nodes (default ``DEFAULT_SCALE`` = 2000,
giving about 10k–13k relationships). Relationship counts grow linearly with it: about
``EDGES_PER_NODE[domain]`` relationships per unit of scale. :func:`scale_for_edges` inverts that
(with a small margin), e.g. ``generate("academic", scale=scale_for_edges("academic", 1_000_000))``
has at least a million relationships.

Same ``(domain, seed, scale)`` -> identical :class:`GraphData` (all randomness comes from one
``numpy.random.Generator(PCG64(seed))``; no wall clock, no hash-order dependence).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData, NodeSet, Rel, RelSet
from components.graph.sources._common import unique_names

__all__ = [
    "DEFAULT_SCALE",
    "DEMO_DOMAINS",
    "EDGES_PER_NODE",
    "MIN_SCALE",
    "generate",
    "scale_for_edges",
]

DEFAULT_SCALE = 2000
MIN_SCALE = 100

Array = np.ndarray
Draw = Callable[[int], tuple[Array, Array]]

# ---------------------------------------------------------------------------------------------
# Sampling (vectorised)
# ---------------------------------------------------------------------------------------------


def _power_probs(rng: np.random.Generator, n: int, alpha: float) -> Array:
    """Probabilities ``∝ (rank + 1) ** -alpha`` over a random ranking of ``n`` nodes."""
    rank = rng.permutation(n)
    w = (rank + 1.0) ** -alpha
    return w / w.sum()


def _weighted_draw(rng: np.random.Generator, p_src: Array, p_dst: Array) -> Draw:
    def draw(k: int) -> tuple[Array, Array]:
        return rng.choice(len(p_src), k, p=p_src), rng.choice(len(p_dst), k, p=p_dst)

    return draw


def _same_group_draw(rng: np.random.Generator, p_src: Array, p_dst: Array, group: Array, same_frac: float) -> Draw:
    """Like :func:`_weighted_draw` on one label, but a ``same_frac`` share of targets is drawn
    (by popularity) from the source's own group, e.g. the same product category."""
    order = np.argsort(group, kind="stable")
    cw = np.cumsum(p_dst[order])
    cw_ext = np.concatenate([[0.0], cw])
    bounds = np.searchsorted(group[order], np.arange(int(group.max()) + 2))

    def draw(k: int) -> tuple[Array, Array]:
        s = rng.choice(len(p_src), k, p=p_src)
        d = rng.choice(len(p_dst), k, p=p_dst)
        same = rng.random(k) < same_frac
        g = group[s[same]]
        lo, hi = cw_ext[bounds[g]], cw_ext[bounds[g + 1]]
        pos = np.searchsorted(cw, lo + rng.random(len(g)) * (hi - lo), side="right")
        d[same] = order[np.clip(pos, bounds[g], bounds[g + 1] - 1)]
        return s, d

    return draw


def _sample_pairs(
    rng: np.random.Generator,
    n_dst: int,
    m: int,
    draw: Draw,
    *,
    same_label: bool = False,
    symmetric: bool = False,
    accept: Callable[[Array, Array], Array] | None = None,
    max_rounds: int = 40,
) -> tuple[Array, Array]:
    """Up to ``m`` distinct (src, dst) index pairs drawn by ``draw``, filtered by ``accept``;
    ``same_label`` drops self-loops, ``symmetric`` treats (a, b) and (b, a) as one pair."""
    keys = np.empty(0, dtype=np.int64)
    rate = 1.0
    for _ in range(max_rounds):
        missing = m - len(keys)
        if missing <= 0:
            break
        k = int(missing * 1.2 / max(rate, 0.02)) + 64
        s, d = draw(k)
        ok = np.ones(k, dtype=bool) if accept is None else accept(s, d)
        if same_label:
            ok &= s != d
        s, d = s[ok], d[ok]
        if symmetric:
            s, d = np.minimum(s, d), np.maximum(s, d)
        before = len(keys)
        keys = np.unique(np.concatenate([keys, s.astype(np.int64) * n_dst + d]))
        rate = max((len(keys) - before) / k, 1e-3)
    if len(keys) > m:
        keys = np.sort(rng.choice(keys, m, replace=False))
    src, dst = keys // n_dst, keys % n_dst
    if symmetric:
        flip = rng.random(len(keys)) < 0.5
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
    return src, dst


def _functional(rng: np.random.Generator, n_src: int, p_dst: Array) -> Array:
    """One target per source (drawn by ``p_dst``), every target used at least once."""
    n_dst = len(p_dst)
    dst = rng.choice(n_dst, n_src, p=p_dst)
    dst[rng.choice(n_src, min(n_dst, n_src), replace=False)] = np.arange(min(n_dst, n_src))
    return dst


def _membership(rng: np.random.Generator, counts: Array, n_member: int, p_member: Array) -> tuple[Array, Array]:
    """Group ``g`` gets ``counts[g]`` members drawn by ``p_member`` (repeats dropped); members
    left without a group join a random one. Returns (member, group) sorted by (group, member)."""
    group = np.repeat(np.arange(len(counts)), counts)
    member = rng.choice(n_member, len(group), p=p_member)
    lonely = np.setdiff1d(np.arange(n_member), member)
    member = np.concatenate([member, lonely])
    group = np.concatenate([group, rng.integers(0, len(counts), len(lonely))])
    keys = np.unique(group.astype(np.int64) * n_member + member)
    return keys % n_member, keys // n_member


def _positions(rng: np.random.Generator, group: Array) -> Array:
    """A random 1-based position of each row within its group (e.g. author order)."""
    order = np.lexsort((rng.random(len(group)), group))
    sorted_group = group[order]
    starts = np.searchsorted(sorted_group, sorted_group, side="left")
    pos = np.empty(len(group), dtype=np.int64)
    pos[order] = np.arange(len(group)) - starts + 1
    return pos


# ---------------------------------------------------------------------------------------------
# Text (vectorised index draws, then string assembly)
# ---------------------------------------------------------------------------------------------


def _pick(rng: np.random.Generator, words: Sequence[str], n: int, p: Array | None = None) -> list[str]:
    idx = rng.choice(len(words), n, p=p) if p is not None else rng.integers(0, len(words), n)
    return [words[i] for i in idx.tolist()]


def _distinct_combos(rng: np.random.Generator, sizes: Sequence[int], n: int) -> list[tuple[int, ...]]:
    """``n`` index tuples over a product space, without repeats while the space lasts."""
    total = math.prod(sizes)
    flat = rng.choice(total, n, replace=False) if n <= total else rng.integers(0, total, n)
    out = []
    for f in flat.tolist():
        combo = []
        for size in reversed(sizes):
            f, r = divmod(f, size)
            combo.append(r)
        out.append(tuple(reversed(combo)))
    return out


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}_{i}" for i in range(n)]


def _skewed_years(rng: np.random.Generator, n: int, first: int, last: int, growth: float) -> Array:
    years = np.arange(first, last + 1)
    w = np.exp(growth * (years - first))
    return rng.choice(years, n, p=w / w.sum())


def _dates(rng: np.random.Generator, n: int, start: _dt.date, days: int) -> list[_dt.date]:
    return [start + _dt.timedelta(days=d) for d in rng.integers(0, days, n).tolist()]


# ---------------------------------------------------------------------------------------------
# GraphData assembly
# ---------------------------------------------------------------------------------------------

Columns = dict[str, tuple[str, list[Any]]]


def _add_nodes(graph: GraphData, label: str, ids: list[str], columns: Columns) -> None:
    names = ("id", *columns)
    values = [col for _, col in columns.values()]
    rows = [dict(zip(names, row, strict=True)) for row in zip(ids, *values, strict=True)]
    graph.nodes[label] = NodeSet(label, rows, {k: t for k, (t, _) in columns.items()})


def _add_rels(
    graph: GraphData,
    rtype: str,
    src: tuple[str, list[str], Array],
    dst: tuple[str, list[str], Array],
    columns: Columns | None = None,
) -> None:
    (sl, sids, si), (dl, dids, di) = src, dst
    cols = columns or {}
    names = tuple(cols)
    values = [col for _, col in cols.values()]
    if values:
        props = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    else:
        props = [{} for _ in range(len(si))]
    rows = [Rel(sl, sids[a], dl, dids[b], p) for a, b, p in zip(si.tolist(), di.tolist(), props, strict=True)]
    graph.rels[rtype] = RelSet(rtype, rows, {k: t for k, (t, _) in cols.items()})


# ---------------------------------------------------------------------------------------------
# academic
# ---------------------------------------------------------------------------------------------

_FIRST = (
    "Wei",
    "Li",
    "Yan",
    "Jun",
    "Hao",
    "Xin",
    "Min",
    "Jing",
    "Anna",
    "Maria",
    "David",
    "Michael",
    "Sarah",
    "James",
    "Laura",
    "Daniel",
    "Elena",
    "Paolo",
    "Giulia",
    "Luca",
    "Sofia",
    "Ahmed",
    "Fatima",
    "Omar",
    "Priya",
    "Rahul",
    "Ananya",
    "Arjun",
    "Kenji",
    "Yuki",
    "Haruto",
    "Sakura",
    "Ji-woo",
    "Min-jun",
    "Seo-yeon",
    "Olga",
    "Ivan",
    "Dmitri",
    "Katarzyna",
    "Piotr",
    "José",
    "Lucía",
    "Mateo",
    "Camila",
    "Björn",
    "Ingrid",
    "Lars",
    "Zoë",
    "Thomas",
    "Emma",
    "Noah",
    "Chloé",
    "Hugo",
    "Amara",
    "Kwame",
    "Chinedu",
    "Ayşe",
    "Mehmet",
    "Nguyen",
    "Linh",
)
_LAST = (
    "Zhang",
    "Wang",
    "Li",
    "Liu",
    "Chen",
    "Yang",
    "Huang",
    "Zhao",
    "Wu",
    "Zhou",
    "Smith",
    "Johnson",
    "Brown",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Rossi",
    "Russo",
    "Ferrari",
    "Müller",
    "Schmidt",
    "Schneider",
    "Fischer",
    "Weber",
    "Kumar",
    "Sharma",
    "Patel",
    "Singh",
    "Gupta",
    "Tanaka",
    "Suzuki",
    "Takahashi",
    "Watanabe",
    "Kim",
    "Lee",
    "Park",
    "Choi",
    "Ivanov",
    "Petrov",
    "Kowalski",
    "Nowak",
    "Silva",
    "Santos",
    "Oliveira",
    "Andersson",
    "Johansson",
    "Nielsen",
    "Dubois",
    "Moreau",
    "Laurent",
    "Okafor",
    "Mensah",
    "Yılmaz",
    "Demir",
    "Tran",
    "Pham",
    "Cohen",
    "Levi",
    "Novak",
    "Horvat",
    "Costa",
    "Ali",
    "Hassan",
)
_ORGS = (
    "Tsinghua University",
    "Peking University",
    "Stanford University",
    "MIT",
    "Carnegie Mellon University",
    "University of California, Berkeley",
    "ETH Zurich",
    "University of Oxford",
    "University of Cambridge",
    "University of Toronto",
    "National University of Singapore",
    "KAIST",
    "University of Tokyo",
    "EPFL",
    "Max Planck Institute for Informatics",
    "University of Illinois Urbana-Champaign",
    "University of Washington",
    "Technical University of Munich",
    "Sapienza University of Rome",
    "University of Amsterdam",
    "Seoul National University",
    "IIT Bombay",
    "IISc Bangalore",
    "University of São Paulo",
    "University of Melbourne",
    "McGill University",
    "Microsoft Research",
    "Google Research",
    "IBM Research",
    "Alibaba DAMO Academy",
    "Huawei Noah's Ark Lab",
    "Meta AI",
    "Inria",
    "University of Edinburgh",
    "KTH Royal Institute",
    "Zhejiang University",
    "Fudan University",
    "Shanghai Jiao Tong University",
    "Nanjing University",
    "Georgia Institute of Technology",
    "University of Michigan",
    "Cornell University",
)
# topic -> four typical tasks
_TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Machine Learning",
        (
            "Classification",
            "Representation Learning",
            "Active Learning",
            "Domain Adaptation",
        ),
    ),
    (
        "Data Mining",
        (
            "Frequent Pattern Mining",
            "Anomaly Detection",
            "Clustering",
            "Time Series Forecasting",
        ),
    ),
    (
        "Databases",
        (
            "Query Optimization",
            "Cardinality Estimation",
            "Transaction Processing",
            "Index Tuning",
        ),
    ),
    (
        "Information Retrieval",
        (
            "Dense Retrieval",
            "Learning to Rank",
            "Query Expansion",
            "Passage Reranking",
        ),
    ),
    (
        "Natural Language Processing",
        (
            "Question Answering",
            "Machine Translation",
            "Named Entity Recognition",
            "Summarization",
        ),
    ),
    (
        "Computer Vision",
        (
            "Image Segmentation",
            "Object Detection",
            "Pose Estimation",
            "Video Understanding",
        ),
    ),
    (
        "Graph Learning",
        (
            "Link Prediction",
            "Node Classification",
            "Graph Generation",
            "Knowledge Graph Completion",
        ),
    ),
    (
        "Recommender Systems",
        (
            "Session-Based Recommendation",
            "Collaborative Filtering",
            "Click-Through Rate Prediction",
            "Cold-Start Recommendation",
        ),
    ),
    (
        "Distributed Systems",
        (
            "Consensus",
            "Stream Processing",
            "Resource Scheduling",
            "Fault Tolerance",
        ),
    ),
    (
        "Security and Privacy",
        (
            "Intrusion Detection",
            "Differential Privacy",
            "Malware Classification",
            "Membership Inference",
        ),
    ),
    (
        "Software Engineering",
        (
            "Program Repair",
            "Code Generation",
            "Test Generation",
            "Bug Localization",
        ),
    ),
    (
        "Robotics",
        (
            "Motion Planning",
            "Grasping",
            "Visual Navigation",
            "Multi-Robot Coordination",
        ),
    ),
    (
        "Bioinformatics",
        (
            "Protein Structure Prediction",
            "Gene Expression Analysis",
            "Drug Repurposing",
            "Variant Calling",
        ),
    ),
    (
        "Human-Computer Interaction",
        (
            "Accessibility",
            "Gesture Recognition",
            "User Modeling",
            "Visualization",
        ),
    ),
    (
        "Computer Networks",
        (
            "Congestion Control",
            "Traffic Classification",
            "Network Verification",
            "Edge Caching",
        ),
    ),
    (
        "Speech Processing",
        (
            "Speech Recognition",
            "Speaker Verification",
            "Speech Synthesis",
            "Spoken Language Understanding",
        ),
    ),
)
_VENUE_FORMS = (
    ("International Conference on {}", "conference"),
    ("Annual Symposium on {}", "conference"),
    ("European Conference on {}", "conference"),
    ("Asian Conference on {}", "conference"),
    ("Pacific-Rim Conference on {}", "conference"),
    ("ACM Conference on {}", "conference"),
    ("IEEE Transactions on {}", "journal"),
    ("Journal of {}", "journal"),
    ("{} Letters", "journal"),
    ("Frontiers of {}", "journal"),
    ("Workshop on Advances in {}", "workshop"),
    ("Workshop on Trustworthy {}", "workshop"),
)
_METHODS = (
    "Graph Neural Networks",
    "Transformers",
    "Contrastive Learning",
    "Reinforcement Learning",
    "Bayesian Inference",
    "Federated Learning",
    "Diffusion Models",
    "Random Forests",
    "Spectral Clustering",
    "Knowledge Distillation",
    "Meta-Learning",
    "Variational Autoencoders",
    "Large Language Models",
    "Mixture of Experts",
    "Hypergraph Convolution",
    "Optimal Transport",
    "Curriculum Learning",
    "Prompt Tuning",
    "Neural Architecture Search",
    "Sparse Attention",
    "Matrix Factorization",
    "Gaussian Processes",
    "Monte Carlo Tree Search",
    "Causal Inference",
    "Retrieval Augmentation",
    "Self-Training",
    "Low-Rank Adaptation",
    "Hashing",
)
_DATA = (
    "Heterogeneous Graphs",
    "Large-Scale Databases",
    "Social Networks",
    "Medical Images",
    "Edge Devices",
    "Scientific Literature",
    "E-commerce Logs",
    "Multilingual Text",
    "Sensor Streams",
    "Road Networks",
    "Source Code",
    "Knowledge Bases",
    "Satellite Imagery",
    "Clinical Notes",
    "Financial Transactions",
    "3D Point Clouds",
    "Dialogue Corpora",
    "Citation Networks",
    "Molecular Graphs",
    "Web Tables",
)
_ADJ = (
    "Scalable",
    "Robust",
    "Efficient",
    "Interpretable",
    "Self-Supervised",
    "Privacy-Preserving",
    "Adaptive",
    "Few-Shot",
    "Zero-Shot",
    "Hierarchical",
    "Incremental",
    "Distributed",
    "Uncertainty-Aware",
    "Lightweight",
    "Multi-Modal",
    "Label-Efficient",
    "Fair",
    "Unified",
)
_TITLE_FORMS = (
    "{adj} {task} on {data} with {method}",
    "{method} for {adj} {task}",
    "Towards {adj} {task} over {data}",
    "On the Limits of {method} for {task}",
    "{acro}: {adj} {method} for {task}",
    "Rethinking {task} in {data}",
    "Learning to {verb} {data} via {method}",
    "A Study of {method} for {task} on {data}",
)
_VERBS = ("Rank", "Compress", "Index", "Align", "Summarize", "Explain", "Query", "Partition")
_CHALLENGES = (
    "remains challenging because labelled data is scarce",
    "is hard to scale beyond millions of entities",
    "suffers from noisy and incomplete inputs",
    "is sensitive to distribution shift",
    "is expensive to run under strict latency budgets",
)
_CONTRIBS = (
    "jointly models structure and text",
    "reduces memory use without hurting accuracy",
    "comes with provable guarantees",
    "needs no task-specific supervision",
    "adapts online to new data",
)
_METRICS = ("accuracy", "F1", "recall@10", "NDCG", "throughput", "AUC")
_BASELINES = ("strong baselines", "the state of the art", "prior methods", "tuned heuristics")


def _acronyms(rng: np.random.Generator, n: int) -> list[str]:
    letters = np.array(list("ABCDEFGHIKLMNOPRSTUVWXZ"))
    lengths = rng.integers(3, 6, n)
    chars = letters[rng.integers(0, len(letters), (n, 5))]
    return ["".join(row[:k]) for row, k in zip(chars.tolist(), lengths.tolist(), strict=True)]


def _paper_text(rng: np.random.Generator, topic: Array) -> tuple[list[str], list[str], list[list[str]]]:
    """Titles, abstracts and keywords of papers on the given topics."""
    n = len(topic)
    task_j = rng.integers(0, 4, n).tolist()
    tasks = [_TOPICS[t][1][j] for t, j in zip(topic.tolist(), task_j, strict=True)]
    methods = _pick(rng, _METHODS, n)
    data = _pick(rng, _DATA, n)
    adjs = _pick(rng, _ADJ, n)
    forms = _pick(rng, _TITLE_FORMS, n)
    verbs = _pick(rng, _VERBS, n)
    acros = _acronyms(rng, n)
    titles = unique_names(
        f.format(adj=a, task=t, data=d, method=m, acro=c, verb=v)
        for f, a, t, d, m, c, v in zip(forms, adjs, tasks, data, methods, acros, verbs, strict=True)
    )
    challenges = _pick(rng, _CHALLENGES, n)
    contribs = _pick(rng, _CONTRIBS, n)
    metrics = _pick(rng, _METRICS, n)
    baselines = _pick(rng, _BASELINES, n)
    n_sets = rng.integers(2, 9, n).tolist()
    gains = np.round(rng.gamma(2.0, 2.5, n) + 0.5, 1).tolist()
    abstracts = [
        f"{t} on {d.lower()} {ch}. We propose {c}, {_article(a)} {a.lower()} approach "
        f"based on {m.lower()} that {co}. Experiments on {k} benchmark datasets show that "
        f"{c} improves {me} by {g}% over {b}."
        for t, d, ch, c, a, m, co, k, me, g, b in zip(
            tasks,
            data,
            challenges,
            acros,
            adjs,
            methods,
            contribs,
            n_sets,
            metrics,
            gains,
            baselines,
            strict=True,
        )
    ]
    keywords = [[t.lower(), m.lower(), d.lower()] for t, m, d in zip(tasks, methods, data, strict=True)]
    return titles, abstracts, keywords


def _academic(rng: np.random.Generator, scale: int) -> GraphData:
    n_topic = len(_TOPICS)
    n_venue = int(np.clip(scale // 80, 8, n_topic * len(_VENUE_FORMS)))
    n_paper = round(scale * 0.55)
    n_author = scale - n_paper - n_venue
    g = GraphData()

    # venues: distinct (form, topic) names
    combos = _distinct_combos(rng, (len(_VENUE_FORMS), n_topic), n_venue)
    venue_topic = np.array([t for _, t in combos])
    venue_ids = _ids("venue", n_venue)
    _add_nodes(
        g,
        "Venue",
        venue_ids,
        {
            "name": ("STRING", [_VENUE_FORMS[f][0].format(_TOPICS[t][0]) for f, t in combos]),
            "kind": ("STRING", [_VENUE_FORMS[f][1] for f, _ in combos]),
            "topic": ("STRING", [_TOPICS[t][0] for _, t in combos]),
        },
    )

    # papers: one venue each; topic mostly the venue's
    venue_of = _functional(rng, n_paper, _power_probs(rng, n_venue, 0.9))
    own_topic = rng.random(n_paper) < 0.85
    topic = np.where(own_topic, venue_topic[venue_of], rng.integers(0, n_topic, n_paper))
    year = _skewed_years(rng, n_paper, 1995, 2024, 0.09)
    titles, abstracts, keywords = _paper_text(rng, topic)
    paper_ids = _ids("paper", n_paper)
    _add_nodes(
        g,
        "Paper",
        paper_ids,
        {
            "title": ("STRING", titles),
            "year": ("INT64", year.tolist()),
            "abstract": ("STRING", abstracts),
            "keywords": ("STRING[]", keywords),
        },
    )

    # authorship: 1..10 authors per paper, productive authors are hubs
    n_authors = 1 + np.minimum(rng.poisson(1.9, n_paper), 9)
    author, paper = _membership(rng, n_authors, n_author, _power_probs(rng, n_author, 0.75))
    papers_per_author = np.bincount(author, minlength=n_author)
    noise = rng.uniform(0.6, 1.4, n_author)
    h_index = np.minimum(papers_per_author, np.round(2.0 * np.sqrt(papers_per_author) * noise))
    h_index = h_index.astype(np.int64)
    first, last = _pick(rng, _FIRST, n_author), _pick(rng, _LAST, n_author)
    initial = np.array(list("ABCDEFGHJKLMNPRSTW"))[rng.integers(0, 18, n_author)].tolist()
    middle = (rng.random(n_author) < 0.25).tolist()
    names = [
        f"{f} {i}. {la}" if mid else f"{f} {la}" for f, i, la, mid in zip(first, initial, last, middle, strict=True)
    ]
    author_ids = _ids("author", n_author)
    _add_nodes(
        g,
        "Author",
        author_ids,
        {
            "name": ("STRING", unique_names(names, "{} {:04d}")),
            "organization": ("STRING", _pick(rng, _ORGS, n_author, _power_probs(rng, len(_ORGS), 0.8))),
            "h_index": ("INT64", h_index.tolist()),
        },
    )

    _add_rels(
        g,
        "WROTE",
        ("Author", author_ids, author),
        ("Paper", paper_ids, paper),
        {"position": ("INT64", _positions(rng, paper).tolist())},
    )
    cites_src, cites_dst = _sample_pairs(
        rng,
        n_paper,
        n_paper * 6,
        _weighted_draw(rng, _power_probs(rng, n_paper, 0.4), _power_probs(rng, n_paper, 0.85)),
        same_label=True,
        accept=lambda s, d: year[d] <= year[s],
    )
    _add_rels(g, "CITES", ("Paper", paper_ids, cites_src), ("Paper", paper_ids, cites_dst))
    _add_rels(g, "PUBLISHED_IN", ("Paper", paper_ids, np.arange(n_paper)), ("Venue", venue_ids, venue_of))
    return g


# ---------------------------------------------------------------------------------------------
# ecommerce
# ---------------------------------------------------------------------------------------------

# category -> (median price, product nouns, uses)
_CATEGORIES: tuple[tuple[str, float, tuple[str, ...], str], ...] = (
    (
        "Electronics",
        80.0,
        (
            "Wireless Earbuds",
            "Bluetooth Speaker",
            "USB-C Hub",
            "Smartwatch",
            "Noise-Cancelling Headphones",
            "Portable Charger",
            "Action Camera",
            "Mechanical Keyboard",
        ),
        "everyday listening, work and travel",
    ),
    (
        "Home & Kitchen",
        35.0,
        (
            "Chef's Knife",
            "Air Fryer",
            "Cast Iron Skillet",
            "French Press",
            "Stand Mixer",
            "Rice Cooker",
            "Cutting Board",
            "Vacuum Sealer",
        ),
        "busy home cooks",
    ),
    (
        "Sports & Outdoors",
        45.0,
        (
            "Yoga Mat",
            "Trekking Poles",
            "Insulated Water Bottle",
            "Camping Tent",
            "Resistance Bands",
            "Cycling Helmet",
            "Sleeping Bag",
        ),
        "training and outdoor trips",
    ),
    (
        "Beauty",
        18.0,
        ("Vitamin C Serum", "Hair Dryer", "Sunscreen SPF 50", "Face Moisturizer", "Electric Toothbrush", "Shampoo Bar"),
        "a simple daily routine",
    ),
    (
        "Toys & Games",
        25.0,
        ("Building Blocks Set", "Jigsaw Puzzle", "Board Game", "Remote Control Car", "Plush Toy", "Science Kit"),
        "kids aged 6 and up",
    ),
    (
        "Books",
        15.0,
        ("Paperback Novel", "Cookbook", "Travel Guide", "Children's Picture Book", "Programming Handbook"),
        "curious readers",
    ),
    (
        "Clothing",
        30.0,
        ("Running Shoes", "Rain Jacket", "Merino Socks", "Denim Jeans", "Fleece Hoodie", "Sun Hat"),
        "all-day comfort",
    ),
    (
        "Grocery",
        9.0,
        ("Green Tea", "Dark Chocolate", "Olive Oil", "Whole Bean Coffee", "Granola", "Hot Sauce"),
        "a healthy pantry",
    ),
    (
        "Pet Supplies",
        22.0,
        ("Dog Leash", "Cat Scratching Post", "Pet Bed", "Aquarium Filter", "Chew Toy"),
        "happy, active pets",
    ),
    (
        "Office Products",
        20.0,
        ("Desk Lamp", "Fountain Pen", "Label Maker", "Monitor Stand", "Notebook Set", "Ergonomic Chair"),
        "a tidy, productive desk",
    ),
    (
        "Tools & Home Improvement",
        55.0,
        ("Cordless Drill", "Laser Level", "Socket Set", "Stud Finder", "Smart Thermostat"),
        "weekend DIY projects",
    ),
    (
        "Automotive",
        40.0,
        ("Dash Cam", "Tire Inflator", "Car Vacuum", "Jump Starter", "Phone Mount"),
        "safer daily driving",
    ),
)
_BRAND_HEAD = (
    "Zen",
    "Nova",
    "Aero",
    "Terra",
    "Luma",
    "Vita",
    "Apex",
    "Kai",
    "Orbi",
    "Pixel",
    "Nord",
    "Sol",
    "Echo",
    "Flux",
    "Bright",
    "Urban",
    "Peak",
    "Moss",
    "Blue",
    "Iron",
)
_BRAND_TAIL = (
    "tech",
    "ware",
    "ly",
    "nest",
    "craft",
    "gear",
    "labs",
    "works",
    "line",
    "field",
    "wave",
    "co",
    "forge",
    "home",
    "ora",
    "ix",
)
_COUNTRIES = (
    "USA",
    "China",
    "Germany",
    "Japan",
    "South Korea",
    "United Kingdom",
    "France",
    "Italy",
    "Sweden",
    "Canada",
    "Taiwan",
    "Netherlands",
    "Denmark",
    "India",
)
_ITEM_ADJ = (
    "Compact",
    "Premium",
    "Ultra-Light",
    "Heavy-Duty",
    "Eco-Friendly",
    "Classic",
    "Pro",
    "Smart",
    "Foldable",
    "Waterproof",
    "Ergonomic",
    "Deluxe",
)
_FEATURES = (
    "a two-year warranty",
    "recycled packaging",
    "a stainless steel body",
    "fast USB-C charging",
    "a machine-washable cover",
    "a non-slip base",
    "a travel pouch",
    "an adjustable fit",
    "BPA-free materials",
    "a lifetime guarantee",
)


def _ecommerce(rng: np.random.Generator, scale: int) -> GraphData:
    n_cat = len(_CATEGORIES)
    n_brand = int(np.clip(scale // 40, 5, len(_BRAND_HEAD) * len(_BRAND_TAIL) * 4))
    n_item = scale - n_brand
    g = GraphData()

    p_cat = _power_probs(rng, n_cat, 0.6)
    p_country = _power_probs(rng, len(_COUNTRIES), 0.7)
    brand_cat = rng.choice(n_cat, n_brand, p=p_cat)
    combos = _distinct_combos(rng, (len(_BRAND_HEAD), len(_BRAND_TAIL)), n_brand)
    brand_names = unique_names((_BRAND_HEAD[h] + _BRAND_TAIL[t] for h, t in combos), "{} {}")
    brand_ids = _ids("brand", n_brand)
    _add_nodes(
        g,
        "Brand",
        brand_ids,
        {
            "name": ("STRING", brand_names),
            "country": ("STRING", _pick(rng, _COUNTRIES, n_brand, p_country)),
            "founded": ("INT64", rng.integers(1950, 2023, n_brand).tolist()),
            "category": ("STRING", [_CATEGORIES[c][0] for c in brand_cat.tolist()]),
        },
    )

    brand_of = _functional(rng, n_item, _power_probs(rng, n_brand, 0.9))
    own_cat = rng.random(n_item) < 0.8
    cat = np.where(own_cat, brand_cat[brand_of], rng.choice(n_cat, n_item, p=p_cat))
    noun_j = rng.integers(0, 100, n_item).tolist()
    nouns = [_CATEGORIES[c][2][j % len(_CATEGORIES[c][2])] for c, j in zip(cat.tolist(), noun_j, strict=True)]
    adjs = _pick(rng, _ITEM_ADJ, n_item)
    models = [
        f"{chr(65 + a)}{chr(65 + b)}-{n}"
        for a, b, n in zip(
            rng.integers(0, 26, n_item).tolist(),
            rng.integers(0, 26, n_item).tolist(),
            rng.integers(100, 1000, n_item).tolist(),
            strict=True,
        )
    ]
    bnames = [brand_names[b] for b in brand_of.tolist()]
    titles = unique_names(
        (f"{b} {a} {n} {m}" for b, a, n, m in zip(bnames, adjs, nouns, models, strict=True)),
        "{} ({})",
    )
    medians = np.array([c[1] for c in _CATEGORIES])[cat]
    price = np.maximum(np.round(medians * rng.lognormal(0.0, 0.6, n_item)) - 0.01, 0.99)
    rating = np.round(np.clip(5.2 - rng.gamma(1.6, 0.45, n_item), 1.0, 5.0), 1)
    p_item = _power_probs(rng, n_item, 0.8)
    reviews = rng.poisson(p_item * n_item * 40.0).astype(np.int64)
    f1, f2 = _pick(rng, _FEATURES, n_item), _pick(rng, _FEATURES, n_item)
    descriptions = [
        f"The {b} {n.lower()} is {_article(a)} {a.lower()} pick for {_CATEGORIES[c][3]}. It comes with {x} and {y}."
        for b, n, a, c, x, y in zip(bnames, nouns, adjs, cat.tolist(), f1, f2, strict=True)
    ]
    item_ids = _ids("item", n_item)
    _add_nodes(
        g,
        "Item",
        item_ids,
        {
            "title": ("STRING", titles),
            "price": ("DOUBLE", price.tolist()),
            "description": ("STRING", descriptions),
            "category": ("STRING", [_CATEGORIES[c][0] for c in cat.tolist()]),
            "rating": ("DOUBLE", rating.tolist()),
            "review_count": ("INT64", reviews.tolist()),
            "in_stock": ("BOOLEAN", (rng.random(n_item) < 0.9).tolist()),
            "first_available": ("DATE", _dates(rng, n_item, _dt.date(2012, 1, 1), 13 * 365)),
        },
    )

    _add_rels(g, "MADE_BY", ("Item", item_ids, np.arange(n_item)), ("Brand", brand_ids, brand_of))
    items = ("Item", item_ids)
    for rtype, per_item, symmetric in (
        ("ALSO_BOUGHT", 3.0, False),
        ("ALSO_VIEWED", 2.0, False),
        ("BOUGHT_TOGETHER", 0.5, True),
    ):
        draw = _same_group_draw(rng, _power_probs(rng, n_item, 0.5), p_item, cat, 0.75)
        s, d = _sample_pairs(rng, n_item, int(n_item * per_item), draw, same_label=True, symmetric=symmetric)
        _add_rels(g, rtype, (*items, s), (*items, d))
    return g


# ---------------------------------------------------------------------------------------------
# biomedical
# ---------------------------------------------------------------------------------------------

_GENE_FAMILIES = (
    ("KCN", "potassium voltage-gated channel subfamily"),
    ("SLC", "solute carrier family"),
    ("ZNF", "zinc finger protein"),
    ("CYP", "cytochrome P450 family"),
    ("TNF", "tumor necrosis factor superfamily member"),
    ("IL", "interleukin"),
    ("ABC", "ATP binding cassette subfamily"),
    ("MAPK", "mitogen-activated protein kinase"),
    ("CDK", "cyclin dependent kinase"),
    ("GPR", "G protein-coupled receptor"),
    ("HOX", "homeobox gene"),
    ("NOTCH", "notch receptor"),
    ("WNT", "Wnt family member"),
    ("FGF", "fibroblast growth factor"),
    ("ADRB", "adrenoceptor beta"),
    ("HTR", "5-hydroxytryptamine receptor"),
    ("DRD", "dopamine receptor"),
    ("COL", "collagen type"),
    ("KRT", "keratin"),
    ("SCN", "sodium voltage-gated channel"),
    ("PPAR", "peroxisome proliferator activated receptor"),
    ("TLR", "toll like receptor"),
    ("HDAC", "histone deacetylase"),
    ("PIK3", "phosphatidylinositol-4,5-bisphosphate 3-kinase"),
)
_GENE_ROLES = (
    "signal transduction",
    "ion transport",
    "transcriptional regulation",
    "immune response",
    "lipid metabolism",
    "cell cycle control",
    "DNA repair",
    "synaptic transmission",
    "extracellular matrix organization",
    "drug metabolism",
)
_CHROMOSOMES = tuple([str(i) for i in range(1, 23)] + ["X", "Y"])
_DRUG_HEAD = (
    "ami",
    "bexa",
    "cefu",
    "dolu",
    "esci",
    "flu",
    "gaba",
    "halo",
    "ibu",
    "keto",
    "lami",
    "meto",
    "nira",
    "olan",
    "pravi",
    "quet",
    "rosu",
    "sema",
    "tami",
    "vala",
    "zola",
    "abe",
    "cari",
    "dexa",
    "elu",
    "fexo",
    "gli",
    "lora",
    "mira",
    "oxy",
)
_DRUG_MID = ("", "ti", "ra", "lo", "xi", "ve", "do", "ni", "ca", "pa")
_DRUG_CLASSES = (
    ("mab", "monoclonal antibody", 148000.0),
    ("nib", "kinase inhibitor", 480.0),
    ("pril", "ACE inhibitor", 400.0),
    ("sartan", "angiotensin receptor blocker", 430.0),
    ("olol", "beta blocker", 270.0),
    ("statin", "HMG-CoA reductase inhibitor", 450.0),
    ("vir", "antiviral", 520.0),
    ("cillin", "penicillin antibiotic", 360.0),
    ("azole", "antifungal", 330.0),
    ("prazole", "proton pump inhibitor", 350.0),
    ("dipine", "calcium channel blocker", 400.0),
    ("tide", "peptide hormone analogue", 3500.0),
    ("parin", "anticoagulant", 5000.0),
    ("setron", "antiemetic", 300.0),
    ("triptan", "antimigraine agent", 300.0),
    ("gliptin", "DPP-4 inhibitor", 400.0),
    ("lukast", "leukotriene receptor antagonist", 580.0),
    ("oxacin", "fluoroquinolone antibiotic", 360.0),
    ("afil", "PDE5 inhibitor", 470.0),
    ("caine", "local anesthetic", 280.0),
)
_DISEASE_MODS = (
    "",
    "chronic",
    "acute",
    "hereditary",
    "juvenile",
    "idiopathic",
    "autoimmune",
    "familial",
    "early-onset",
    "progressive",
)
_DISEASE_SITES = (
    ("renal", "urinary"),
    ("hepatic", "digestive"),
    ("pulmonary", "respiratory"),
    ("cardiac", "cardiovascular"),
    ("cerebral", "nervous"),
    ("gastric", "digestive"),
    ("thyroid", "endocrine"),
    ("pancreatic", "endocrine"),
    ("retinal", "eye"),
    ("cutaneous", "skin"),
    ("spinal", "nervous"),
    ("colorectal", "digestive"),
    ("ovarian", "reproductive"),
    ("prostatic", "reproductive"),
    ("bone", "musculoskeletal"),
    ("muscular", "musculoskeletal"),
    ("vascular", "cardiovascular"),
    ("lymphatic", "immune"),
)
_CONDITIONS = (
    "fibrosis",
    "carcinoma",
    "inflammation",
    "insufficiency",
    "dystrophy",
    "neuropathy",
    "sclerosis",
    "adenoma",
    "infection",
    "hypertension",
    "atrophy",
    "degeneration",
    "lymphoma",
    "ischemia",
)
_SYMPTOMS = (
    ("headache", "nervous"),
    ("fatigue", "general"),
    ("nausea", "digestive"),
    ("fever", "general"),
    ("dyspnea", "respiratory"),
    ("cough", "respiratory"),
    ("chest pain", "cardiovascular"),
    ("palpitations", "cardiovascular"),
    ("dizziness", "nervous"),
    ("vomiting", "digestive"),
    ("abdominal pain", "digestive"),
    ("diarrhea", "digestive"),
    ("joint pain", "musculoskeletal"),
    ("muscle weakness", "musculoskeletal"),
    ("rash", "skin"),
    ("pruritus", "skin"),
    ("edema", "cardiovascular"),
    ("weight loss", "general"),
    ("insomnia", "nervous"),
    ("tremor", "nervous"),
    ("blurred vision", "eye"),
    ("jaundice", "digestive"),
    ("hematuria", "urinary"),
    ("back pain", "musculoskeletal"),
    ("seizures", "nervous"),
    ("anxiety", "nervous"),
    ("night sweats", "general"),
    ("hair loss", "skin"),
    ("numbness", "nervous"),
    ("wheezing", "respiratory"),
)
_SEVERITY = ("", "mild", "severe", "chronic", "intermittent", "nocturnal", "recurrent")


def _genes(rng: np.random.Generator, n: int) -> Columns:
    combos = _distinct_combos(rng, (len(_GENE_FAMILIES), 999, 6), n)
    suffix = ("", "A", "B", "C", "D", "L")
    symbols = unique_names((f"{_GENE_FAMILIES[f][0]}{k + 1}{suffix[s]}" for f, k, s in combos), "{}-{}")
    names = [f"{_GENE_FAMILIES[f][1]} {k + 1}{suffix[s]}" for f, k, s in combos]
    roles = _pick(rng, _GENE_ROLES, n)
    chroms = _pick(rng, _CHROMOSOMES, n, _power_probs(rng, len(_CHROMOSOMES), 0.3))
    return {
        "symbol": ("STRING", symbols),
        "name": ("STRING", names),
        "chromosome": ("STRING", chroms),
        "description": (
            "STRING",
            [
                f"{s} encodes a {nm} involved in {r}; the gene maps to chromosome {c}."
                for s, nm, r, c in zip(symbols, names, roles, chroms, strict=True)
            ],
        ),
    }


def _compounds(rng: np.random.Generator, n: int) -> Columns:
    sizes = (len(_DRUG_HEAD), len(_DRUG_MID), len(_DRUG_MID), len(_DRUG_CLASSES))
    combos = _distinct_combos(rng, sizes, n)
    names = unique_names(
        (f"{_DRUG_HEAD[h]}{_DRUG_MID[a]}{_DRUG_MID[b]}{_DRUG_CLASSES[c][0]}".capitalize() for h, a, b, c in combos),
        "{} {}",
    )
    cls = [_DRUG_CLASSES[c] for *_, c in combos]
    weight = np.round(np.array([c[2] for c in cls]) * rng.lognormal(0.0, 0.2, n), 2)
    approved = (rng.random(n) < 0.6).tolist()
    years = rng.integers(1965, 2024, n).tolist()
    return {
        "name": ("STRING", names),
        "drug_class": ("STRING", [c[1] for c in cls]),
        "molecular_weight": ("DOUBLE", weight.tolist()),
        "approved": ("BOOLEAN", approved),
        "description": (
            "STRING",
            [
                f"{nm} is a {c[1]}" + (f" first approved in {y}." if ok else " in clinical development.")
                for nm, c, ok, y in zip(names, cls, approved, years, strict=True)
            ],
        ),
    }


def _diseases(rng: np.random.Generator, n: int) -> Columns:
    combos = _distinct_combos(rng, (len(_DISEASE_MODS), len(_DISEASE_SITES), len(_CONDITIONS)), n)
    names = unique_names(
        (" ".join(w for w in (_DISEASE_MODS[m], _DISEASE_SITES[s][0], _CONDITIONS[c]) if w) for m, s, c in combos),
        "{} type {}",
    )
    letters = rng.integers(0, 26, n).tolist()
    codes = [
        f"{chr(65 + a)}{b:02d}.{c}"
        for a, b, c in zip(letters, rng.integers(0, 100, n).tolist(), rng.integers(0, 10, n).tolist(), strict=True)
    ]
    return {
        "name": ("STRING", names),
        "category": ("STRING", [f"{_DISEASE_SITES[s][1]} system disease" for _, s, _ in combos]),
        "icd10": ("STRING", codes),
        "description": (
            "STRING",
            [
                f"A {(_DISEASE_MODS[m] + ' ') if _DISEASE_MODS[m] else ''}disorder of the "
                f"{_DISEASE_SITES[s][1]} system marked by {_CONDITIONS[c]} of "
                f"{_DISEASE_SITES[s][0]} tissue."
                for m, s, c in combos
            ],
        ),
    }


def _symptoms(rng: np.random.Generator, n: int) -> Columns:
    combos = _distinct_combos(rng, (len(_SEVERITY), len(_SYMPTOMS)), n)
    names = unique_names((f"{_SEVERITY[s]} {_SYMPTOMS[b][0]}".strip() for s, b in combos), "{} ({})")
    return {
        "name": ("STRING", names),
        "body_system": ("STRING", [_SYMPTOMS[b][1] for _, b in combos]),
        "description": (
            "STRING",
            [
                f"{nm.capitalize()} is a sign or symptom related to the {_SYMPTOMS[b][1]} system."
                for nm, (_, b) in zip(names, combos, strict=True)
            ],
        ),
    }


def _biomedical(rng: np.random.Generator, scale: int) -> GraphData:
    n_symptom = int(np.clip(round(scale * 0.08), 10, len(_SEVERITY) * len(_SYMPTOMS)))
    n_disease = round(scale * 0.12)
    n_compound = round(scale * 0.25)
    n_gene = scale - n_symptom - n_disease - n_compound
    g = GraphData()
    labels = (
        ("Compound", "compound", n_compound, _compounds),
        ("Disease", "disease", n_disease, _diseases),
        ("Gene", "gene", n_gene, _genes),
        ("Symptom", "symptom", n_symptom, _symptoms),
    )
    ids: dict[str, list[str]] = {}
    for label, prefix, n, columns in labels:
        ids[label] = _ids(prefix, n)
        _add_nodes(g, label, ids[label], columns(rng, n))
    size = {label: n for label, _, n, _ in labels}

    # (type, src, dst, relationships per source node, src alpha, dst alpha, symmetric)
    plan = (
        ("TREATS", "Compound", "Disease", 1.5, 0.6, 0.8, False),
        ("ASSOCIATES", "Disease", "Gene", 12.0, 0.5, 0.8, False),
        ("PRESENTS", "Disease", "Symptom", 6.0, 0.4, 0.9, False),
        ("BINDS", "Compound", "Gene", 5.0, 0.5, 0.85, False),
        ("INTERACTS_WITH", "Gene", "Gene", 2.0, 0.7, 0.7, True),
    )
    for rtype, sl, dl, per_src, a_src, a_dst, symmetric in plan:
        p_src, p_dst = _power_probs(rng, size[sl], a_src), _power_probs(rng, size[dl], a_dst)
        draw = _weighted_draw(rng, p_src, p_dst)
        s, d = _sample_pairs(rng, size[dl], int(size[sl] * per_src), draw, same_label=sl == dl, symmetric=symmetric)
        props: Columns | None = None
        if rtype == "BINDS":
            props = {"affinity": ("DOUBLE", np.round(rng.uniform(4.0, 10.0, len(s)), 2).tolist())}
        _add_rels(g, rtype, (sl, ids[sl], s), (dl, ids[dl], d), props)
    return g


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Domain:
    build: Callable[[np.random.Generator, int], GraphData]
    edges_per_node: float  # measured mean relationships per unit of scale (see EDGES_PER_NODE)


_DOMAINS: dict[str, _Domain] = {
    "academic": _Domain(_academic, 5.5),
    "ecommerce": _Domain(_ecommerce, 6.3),
    "biomedical": _Domain(_biomedical, 4.9),
}
DEMO_DOMAINS: tuple[str, ...] = tuple(_DOMAINS)
EDGES_PER_NODE: dict[str, float] = {name: d.edges_per_node for name, d in _DOMAINS.items()}


def _domain(name: str) -> _Domain:
    try:
        return _DOMAINS[name]
    except KeyError:
        raise ImportFormatError(f"unknown demo domain {name!r}; choose one of {', '.join(DEMO_DOMAINS)}") from None


def generate(domain: str, seed: int = 0, scale: int | None = None) -> GraphData:
    """Generate the demo graph ``domain`` with about ``scale`` nodes (default 2000).

    >>> g = generate("academic", seed=1, scale=200)
    >>> sorted(g.nodes), sorted(g.rels)
    (['Author', 'Paper', 'Venue'], ['CITES', 'PUBLISHED_IN', 'WROTE'])
    """
    spec = _domain(domain)
    scale = DEFAULT_SCALE if scale is None else scale
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < MIN_SCALE:
        raise ImportFormatError(f"scale must be an integer >= {MIN_SCALE}, got {scale!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ImportFormatError(f"seed must be a non-negative integer, got {seed!r}")
    with _gc_paused():
        return spec.build(np.random.Generator(np.random.PCG64(seed)), scale)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Building millions of small row objects triggers many useless cyclic-GC passes (they
    hold no cycles); pausing the collector halves generation time at ~1M relationships."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def scale_for_edges(domain: str, n_edges: int) -> int:
    """The ``scale`` at which ``domain`` has at least ``n_edges`` relationships (about 3 %
    headroom over ``n_edges / EDGES_PER_NODE[domain]``).

    >>> scale_for_edges("academic", 1_000_000)
    187442
    """
    spec = _domain(domain)
    return max(MIN_SCALE, math.ceil(n_edges / (spec.edges_per_node * 0.97)))
