"""GRIT-style graph-reasoning tasks: narrative scenarios over random graphs, the
six solver tasks, four naming schemes; ground truth from the exact graph-IR solvers
(:mod:`components.tools.graph_ir`).

An item is a story ("a courier company connects depots …") whose graph the solver agent has to
write down as GRAIN's JSON IR (``<graph>…</graph>``) before answering. Each item carries:

* ``gold_ir`` — the IR of the story's graph and question (what a perfect agent writes);
* ``answer`` — :func:`~components.tools.graph_ir.solve` on ``gold_ir``, rendered as a string
  (a number, a comma-separated visit order, or a set of nodes; ``answer_type`` says which);
* ``task``, ``scenario``, ``naming``, ``n_nodes``, ``seed``.

**Naming schemes** rename the nodes of one sampled graph without changing its structure (an
isomorphism): ``canonical`` (``0 … n−1``), ``random_id`` (random 5-character ids), ``semantic``
(words from the scenario's pool, e.g. city names) and ``mixed`` (each node semantic or random id
at random). The same ``seed`` gives the same graph under every scheme, so accuracy across
namings compares like with like.

:func:`generate_items` draws items round-robin over tasks × scenarios × namings.
"""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import write_parquet
from components.tools.graph_ir import parse_graph_ir, solve

__all__ = [
    "GRIT_TASKS",
    "NAMINGS",
    "SCENARIOS",
    "TASKS",
    "GritConfig",
    "GritItem",
    "Scenario",
    "build_grit_tasks",
    "build_item",
    "build_splits",
    "from_row",
    "generate_items",
]

TASKS: Final = ("shortest_path", "graph_coloring", "tsp", "vertex_cover", "bfs", "centrality")
NAMINGS: Final = ("canonical", "random_id", "semantic", "mixed")


@dataclass(frozen=True)
class Scenario:
    """A narrative template for one task. ``text`` has ``{edges}`` and the task's parameters
    (``{source}``, ``{target}``, ``{start}``); ``edge`` renders one edge (``{u}``, ``{v}``, ``{w}``)."""

    name: str
    task: str
    text: str
    edge: str
    names: tuple[str, ...]
    weighted: bool = False


_CITIES = (
    "Amsterdam",
    "Berlin",
    "Cairo",
    "Dublin",
    "Edinburgh",
    "Florence",
    "Geneva",
    "Helsinki",
    "Istanbul",
    "Jakarta",
    "Kyoto",
    "Lisbon",
    "Madrid",
    "Nairobi",
    "Oslo",
    "Prague",
    "Quito",
    "Rome",
    "Seoul",
    "Tokyo",
    "Utrecht",
    "Vienna",
    "Warsaw",
    "Xian",
    "York",
    "Zurich",
)
_PEOPLE = (
    "Alice",
    "Bruno",
    "Chloe",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kira",
    "Liam",
    "Maya",
    "Nils",
    "Olga",
    "Pablo",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
)
_LABS = (
    "assay",
    "biopsy",
    "culture",
    "dialysis",
    "echo",
    "fluoro",
    "genome",
    "histology",
    "imaging",
    "karyotype",
    "lipid",
    "mri",
    "nuclear",
    "oncology",
    "pathology",
    "radiology",
    "serology",
    "toxicology",
    "ultrasound",
    "virology",
    "xray",
    "zymography",
    "allergy",
    "cardio",
    "derma",
    "endo",
)

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        "courier",
        "shortest_path",
        "A courier company runs roads between depots. {edges} What is the shortest total driving time "
        "from {source} to {target}?",
        "The road between {u} and {v} takes {w} minutes.",
        _CITIES,
        True,
    ),
    Scenario(
        "hospital_transfer",
        "shortest_path",
        "Samples move between hospital labs through pneumatic tubes. {edges} What is the minimum transfer "
        "time for a sample from the {source} lab to the {target} lab?",
        "The {u}–{v} tube takes {w} seconds.",
        _LABS,
        True,
    ),
    Scenario(
        "exam_rooms",
        "graph_coloring",
        "A school schedules exams; two exams that share a student cannot run in the same slot. {edges} "
        "What is the smallest number of time slots needed?",
        "Exams {u} and {v} share a student.",
        _LABS,
    ),
    Scenario(
        "radio",
        "graph_coloring",
        "Radio towers that are close interfere unless they use different frequencies. {edges} How many "
        "frequencies are needed at least?",
        "Towers {u} and {v} are close.",
        _CITIES,
    ),
    Scenario(
        "sales_tour",
        "tsp",
        "A sales representative visits every city exactly once and returns home to {start}. {edges} What is "
        "the length of the shortest such round trip?",
        "{u} and {v} are {w} km apart.",
        _CITIES,
        True,
    ),
    Scenario(
        "museum_tour",
        "tsp",
        "A guide leads a tour through every gallery once, starting and ending at {start}. {edges} What is the "
        "shortest total walking time?",
        "Walking between {u} and {v} takes {w} minutes.",
        _LABS,
        True,
    ),
    Scenario(
        "cameras",
        "vertex_cover",
        "Cameras placed at street corners watch every street that touches their corner. {edges} What is the "
        "smallest number of cameras that watches every street?",
        "A street joins {u} and {v}.",
        _CITIES,
    ),
    Scenario(
        "mentors",
        "vertex_cover",
        "Every collaboration must include at least one mentor. {edges} What is the smallest number of people "
        "who must be mentors?",
        "{u} collaborates with {v}.",
        _PEOPLE,
    ),
    Scenario(
        "rumour",
        "bfs",
        "A rumour spreads through friendships, starting with {source}; friends are told in alphabetical order "
        "of their names. {edges} In what order does the rumour reach people (breadth-first)?",
        "{u} and {v} are friends.",
        _PEOPLE,
    ),
    Scenario(
        "outbreak",
        "bfs",
        "Contact tracing starts at {source} and explores contacts breadth-first, neighbours in alphabetical "
        "order. {edges} List the order in which places are visited.",
        "{u} and {v} had contact.",
        _CITIES,
    ),
    Scenario(
        "influencer",
        "centrality",
        "In a social network, {edges} Who has the most connections (highest degree centrality)?",
        "{u} follows {v}.",
        _PEOPLE,
    ),
    Scenario(
        "hub_airport",
        "centrality",
        "Airlines fly direct routes. {edges} Which airport is the best connected (highest degree centrality)?",
        "There is a direct route between {u} and {v}.",
        _CITIES,
    ),
    # a third and fourth phrasing per task (GRAIN Table 8-style real-world framings)
    Scenario(
        "power_grid",
        "shortest_path",
        "A utility maps its power lines between substations; each line has a loss in kilowatts. {edges} What "
        "is the smallest total loss on a route from {source} to {target}?",
        "The {u}–{v} line loses {w} kW.",
        _CITIES,
        True,
    ),
    Scenario(
        "hiking",
        "shortest_path",
        "Trails connect mountain huts. {edges} How many hours does the quickest hike from {source} to {target} take?",
        "The trail from {u} to {v} takes {w} hours.",
        _PEOPLE,
        True,
    ),
    Scenario(
        "lab_shifts",
        "graph_coloring",
        "Lab instruments that share a power circuit cannot run in the same shift. {edges} What is the "
        "minimum number of shifts?",
        "The {u} and {v} instruments share a circuit.",
        _LABS,
    ),
    Scenario(
        "seating",
        "graph_coloring",
        "Guests who dislike each other must sit at different tables. {edges} How many tables are needed at least?",
        "{u} dislikes {v}.",
        _PEOPLE,
    ),
    Scenario(
        "drone_delivery",
        "tsp",
        "A drone leaves {start}, visits every drop point exactly once and returns. {edges} What is the "
        "shortest total flight time?",
        "Flying between {u} and {v} takes {w} minutes.",
        _CITIES,
        True,
    ),
    Scenario(
        "inspection",
        "tsp",
        "An inspector starts at the {start} lab, inspects every lab once and comes back. {edges} What is the "
        "shortest total walking distance?",
        "The {u} and {v} labs are {w} hundred metres apart.",
        _LABS,
        True,
    ),
    Scenario(
        "firewalls",
        "vertex_cover",
        "Every network link must have a firewall on at least one of its two servers. {edges} What is the "
        "fewest servers that need a firewall?",
        "Server {u} links to server {v}.",
        _LABS,
    ),
    Scenario(
        "guards",
        "vertex_cover",
        "A museum places guards in rooms; a guard watches every doorway of its room. {edges} What is the "
        "fewest guards that watch every doorway?",
        "A doorway joins rooms {u} and {v}.",
        _CITIES,
    ),
    Scenario(
        "citation_crawl",
        "bfs",
        "A crawler starts at {source} and follows links breadth-first, neighbours in alphabetical order. "
        "{edges} In what order are the pages visited?",
        "Pages {u} and {v} link to each other.",
        _LABS,
    ),
    Scenario(
        "phone_tree",
        "bfs",
        "A phone tree starts with {source}; each person calls their contacts in alphabetical order, breadth "
        "first. {edges} In what order are people reached?",
        "{u} and {v} have each other's number.",
        _PEOPLE,
    ),
    Scenario(
        "gene_hub",
        "centrality",
        "In a protein interaction network, {edges} Which protein has the most interactions (highest "
        "degree centrality)?",
        "{u} interacts with {v}.",
        _LABS,
    ),
    Scenario(
        "club",
        "centrality",
        "In a sports club, {edges} Who has played the most different partners (highest degree centrality)?",
        "{u} has played with {v}.",
        _PEOPLE,
    ),
)


@dataclass(frozen=True)
class GritItem:
    id: str
    task: str
    scenario: str
    naming: str
    n_nodes: int
    seed: int
    question: str
    answer: str
    answer_type: str
    gold_ir: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_row(self, split: str) -> dict[str, Any]:
        """A flat row (Parquet-friendly: the IR as JSON text) in ``split``."""
        row = {k: v for k, v in asdict(self).items() if k != "gold_ir"}
        return {**row, "split": split, "gold_ir_json": json.dumps(self.gold_ir, ensure_ascii=False)}


def from_row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row with ``gold_ir`` decoded (what the GRAIN stage and the grain reward read)."""
    return {**row, "gold_ir": json.loads(row["gold_ir_json"])}


def _random_edges(rng: random.Random, n: int, task: str) -> list[tuple[int, int, int]]:
    """A connected graph on ``0 … n−1`` with weights 1–9 (unused by the unweighted tasks): a random
    spanning tree (a random Hamiltonian cycle for TSP, so a tour exists) plus extra edges at an
    expected extra degree of about 2 (3 for colouring / vertex cover) — sparse enough that a
    60-node story stays readable, complete for TSP up to 8 nodes."""
    order = list(range(n))
    rng.shuffle(order)
    if task == "tsp" and n <= 8:
        pairs = {(u, v) for u in range(n) for v in range(u + 1, n)}
    elif task == "tsp":
        pairs = {tuple(sorted((order[i], order[(i + 1) % n]))) for i in range(n)}
    else:
        pairs = {tuple(sorted((order[i], order[rng.randrange(i)]))) for i in range(1, n)}
    extra = 3.0 if task in ("graph_coloring", "vertex_cover") else 2.0
    density = min(0.3, extra / max(1, n - 1))
    pairs |= {(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < density}
    return [(u, v, rng.randint(1, 9)) for u, v in sorted(pairs)]


def _names(rng: random.Random, n: int, naming: str, pool: Sequence[str]) -> list[str]:
    if naming == "canonical":
        return [str(i) for i in range(n)]
    ids = set()
    while len(ids) < n:
        ids.add("".join(rng.choices(string.ascii_uppercase + string.digits, k=5)))
    random_ids = sorted(ids)
    rng.shuffle(random_ids)
    if naming == "random_id":
        return random_ids
    if n > 3 * len(pool):
        raise ValueError(f"the scenario's name pool has {len(pool)} names; at most {3 * len(pool)} nodes")
    names = list(pool) + [f"{q} {p}" for q in ("North", "South") for p in pool]  # larger graphs
    semantic = rng.sample(names[: max(n, len(pool))], n)
    if naming == "semantic":
        return semantic
    return [semantic[i] if rng.random() < 0.5 else random_ids[i] for i in range(n)]


def _render_answer(task: str, answer: dict[str, Any]) -> tuple[str, str]:
    if task in ("shortest_path", "tsp"):
        return str(answer["total_weight"]), "number"
    if task == "graph_coloring":
        return str(answer["num_colors"]), "number"
    if task == "vertex_cover":
        return str(answer["size"]), "number"
    if task == "bfs":
        return ", ".join(answer["order"]), "sequence"
    return ", ".join(answer["max_nodes"]), "set"


def build_item(scenario: Scenario, naming: str, n_nodes: int, seed: int) -> GritItem:
    """One item: the graph of ``seed`` (independent of ``naming``), renamed by ``naming``."""
    if naming not in NAMINGS:
        raise ValueError(f"unknown naming {naming!r}; known: {NAMINGS}")
    graph_rng = random.Random(f"{scenario.task}:{n_nodes}:{seed}")
    edges = _random_edges(graph_rng, n_nodes, scenario.task)
    pick = graph_rng.sample(range(n_nodes), 2)
    names = _names(random.Random(f"{seed}:{naming}:{scenario.name}"), n_nodes, naming, scenario.names)
    data: dict[str, dict[str, int]] = {names[i]: {} for i in range(n_nodes)}
    for u, v, w in edges:
        data[names[u]][names[v]] = w if scenario.weighted else 1
    params: dict[str, Any] = {}
    if scenario.task == "shortest_path":
        params = {"source": names[pick[0]], "target": names[pick[1]]}
    elif scenario.task == "bfs":
        params = {"source": names[pick[0]]}
    elif scenario.task == "tsp":
        params = {"start": names[pick[0]]}
    elif scenario.task == "centrality":
        params = {"kind": "degree"}
    gold_ir = {
        "problem_type": scenario.task,
        "graph": {"type": "adjacency_list", "data": data, "directed": False, "weighted": scenario.weighted},
        "parameters": params,
    }
    ir = parse_graph_ir(json.dumps(gold_ir))
    result = solve(ir)  # type: ignore[arg-type]  # the generator only builds valid IR
    if result.status != "ok" or result.answer is None:
        raise ValueError(f"{scenario.name} seed {seed}: the solver returned {result.status}")
    answer, answer_type = _render_answer(scenario.task, asdict(result.answer))
    text_edges = " ".join(scenario.edge.format(u=names[u], v=names[v], w=w) for u, v, w in edges)
    question = scenario.text.format(edges=text_edges, **params)
    return GritItem(
        f"{scenario.name}-{naming}-{n_nodes}-{seed}",
        scenario.task,
        scenario.name,
        naming,
        n_nodes,
        seed,
        question,
        answer,
        answer_type,
        gold_ir,
    )


def generate_items(
    count: int,
    *,
    sizes: tuple[int, int] = (10, 40),
    scenarios: Sequence[Scenario] = SCENARIOS,
    namings: Sequence[str] = NAMINGS,
    seed: int = 0,
) -> list[GritItem]:
    """``count`` items, round-robin over scenarios × namings, sizes uniform in ``sizes`` (inclusive)."""
    rng = random.Random(seed)
    combos = [(s, nm) for s in scenarios for nm in namings]
    rng.shuffle(combos)
    out = []
    for i in range(count):
        scenario, naming = combos[i % len(combos)]
        out.append(build_item(scenario, naming, rng.randint(*sizes), seed * 1_000_003 + i))
    return out


@dataclass(frozen=True)
class GritConfig:
    """The GRIT-style splits (GRAIN's GRIT): ``train`` and ``test`` share scenarios
    (different graphs) with ``sizes`` nodes; ``large`` uses the same scenarios on ``large_sizes``
    nodes (larger-graph generalisation); ``ood`` uses only ``ood_scenarios`` (one per task), which
    training never sees. Defaults are GRIT's 10–40 / 40–60 nodes; the CPU demo configures smaller
    graphs (a 40-node story is thousands of tokens)."""

    train: int = 48
    test: int = 24
    ood: int = 24
    large: int = 12
    sizes: tuple[int, int] = (10, 40)
    large_sizes: tuple[int, int] = (40, 60)
    ood_scenarios: tuple[str, ...] = ("hospital_transfer", "radio", "museum_tour", "mentors", "outbreak", "hub_airport")
    seed: int = 0

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> GritConfig:
        """A domain YAML's ``grit:`` section; unknown keys are an error."""
        raw = checked_options(cls, raw, "grit")
        for key in ("sizes", "large_sizes", "ood_scenarios"):
            if key in raw:
                raw[key] = tuple(raw[key])
        return cls(**raw)

    def __post_init__(self) -> None:
        for lo, hi in (self.sizes, self.large_sizes):
            if not 2 <= lo <= hi:
                raise ValueError(f"node ranges need 2 <= low <= high, got {(lo, hi)}")
        known = {s.name for s in SCENARIOS}
        unknown = set(self.ood_scenarios) - known
        if unknown:
            raise ValueError(f"unknown OOD scenarios {sorted(unknown)}; known: {sorted(known)}")
        if not known - set(self.ood_scenarios):
            raise ValueError("every scenario is OOD: nothing left to train on")


def build_splits(config: GritConfig = GritConfig()) -> list[dict[str, Any]]:
    """Rows (:meth:`GritItem.to_row`) of the train / test / ood / large splits; seeds differ per
    split, so no graph is shared between them."""
    ind = [s for s in SCENARIOS if s.name not in config.ood_scenarios]
    ood = [s for s in SCENARIOS if s.name in config.ood_scenarios]
    rows = []
    for split, count, scenarios, sizes, offset in (
        ("train", config.train, ind, config.sizes, 0),
        ("test", config.test, ind, config.sizes, 1),
        ("ood", config.ood, ood, config.sizes, 2),
        ("large", config.large, ind, config.large_sizes, 3),
    ):
        items = generate_items(count, sizes=sizes, scenarios=scenarios, seed=config.seed * 4 + offset)
        rows += [it.to_row(split) for it in items]
    return rows


def build_grit_tasks(inputs: Mapping[str, Artifact], config: GritConfig, out_dir: Path, ctx: BuildContext) -> Artifact:
    """The ``grit_tasks`` layer: :func:`build_splits` as ``tasks.parquet``; the summary counts
    items per split / task and per naming scheme and keeps a few for a preview."""
    rows = build_splits(config)
    path = write_parquet(rows, out_dir / "tasks.parquet")
    by_split_task = Counter(f"{r['split']} / {r['task']}" for r in rows)
    preview = [{k: r[k] for k in ("split", "task", "naming", "question", "answer")} for r in rows[:8]]
    return GRIT_TASKS.artifact(
        inputs,
        config,
        ctx,
        path=path,
        counts={"items": len(rows)},
        summary={
            "by_split_task": dict(by_split_task),
            "by_naming": dict(Counter(r["naming"] for r in rows)),
            "preview": preview,
        },
    )


GRIT_TASKS: Final = Layer("grit_tasks", build_grit_tasks, asdict)
