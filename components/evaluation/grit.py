"""GRIT-style graph-reasoning tasks (SPEC §2c, §8): narrative scenarios over random graphs, the
six solver tasks, four naming schemes; ground truth from the Part 2 solvers.

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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from components.tools.graph_ir import parse_graph_ir, solve

__all__ = ["NAMINGS", "SCENARIOS", "TASKS", "GritConfig", "GritItem", "Scenario", "build_item",
           "build_splits", "from_row", "generate_items"]

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


_CITIES = ("Amsterdam", "Berlin", "Cairo", "Dublin", "Edinburgh", "Florence", "Geneva", "Helsinki", "Istanbul",
           "Jakarta", "Kyoto", "Lisbon", "Madrid", "Nairobi", "Oslo", "Prague", "Quito", "Rome", "Seoul", "Tokyo",
           "Utrecht", "Vienna", "Warsaw", "Xian", "York", "Zurich")
_PEOPLE = ("Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira", "Liam",
           "Maya", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wen", "Ximena", "Yusuf",
           "Zoe")
_LABS = ("assay", "biopsy", "culture", "dialysis", "echo", "fluoro", "genome", "histology", "imaging", "karyotype",
         "lipid", "mri", "nuclear", "oncology", "pathology", "radiology", "serology", "toxicology", "ultrasound",
         "virology", "xray", "zymography", "allergy", "cardio", "derma", "endo")

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario("courier", "shortest_path",
             "A courier company runs roads between depots. {edges} What is the shortest total driving time "
             "from {source} to {target}?", "The road between {u} and {v} takes {w} minutes.", _CITIES, True),
    Scenario("hospital_transfer", "shortest_path",
             "Samples move between hospital labs through pneumatic tubes. {edges} What is the minimum transfer "
             "time for a sample from the {source} lab to the {target} lab?", "The {u}–{v} tube takes {w} seconds.",
             _LABS, True),
    Scenario("exam_rooms", "graph_coloring",
             "A school schedules exams; two exams that share a student cannot run in the same slot. {edges} "
             "What is the smallest number of time slots needed?", "Exams {u} and {v} share a student.", _LABS),
    Scenario("radio", "graph_coloring",
             "Radio towers that are close interfere unless they use different frequencies. {edges} How many "
             "frequencies are needed at least?", "Towers {u} and {v} are close.", _CITIES),
    Scenario("sales_tour", "tsp",
             "A sales representative visits every city exactly once and returns home to {start}. {edges} What is "
             "the length of the shortest such round trip?", "{u} and {v} are {w} km apart.", _CITIES, True),
    Scenario("museum_tour", "tsp",
             "A guide leads a tour through every gallery once, starting and ending at {start}. {edges} What is the "
             "shortest total walking time?", "Walking between {u} and {v} takes {w} minutes.", _LABS, True),
    Scenario("cameras", "vertex_cover",
             "Cameras placed at street corners watch every street that touches their corner. {edges} What is the "
             "smallest number of cameras that watches every street?", "A street joins {u} and {v}.", _CITIES),
    Scenario("mentors", "vertex_cover",
             "Every collaboration must include at least one mentor. {edges} What is the smallest number of people "
             "who must be mentors?", "{u} collaborates with {v}.", _PEOPLE),
    Scenario("rumour", "bfs",
             "A rumour spreads through friendships, starting with {source}; friends are told in alphabetical order "
             "of their names. {edges} In what order does the rumour reach people (breadth-first)?",
             "{u} and {v} are friends.", _PEOPLE),
    Scenario("outbreak", "bfs",
             "Contact tracing starts at {source} and explores contacts breadth-first, neighbours in alphabetical "
             "order. {edges} List the order in which places are visited.", "{u} and {v} had contact.", _CITIES),
    Scenario("influencer", "centrality",
             "In a social network, {edges} Who has the most connections (highest degree centrality)?",
             "{u} follows {v}.", _PEOPLE),
    Scenario("hub_airport", "centrality",
             "Airlines fly direct routes. {edges} Which airport is the best connected (highest degree "
             "centrality)?", "There is a direct route between {u} and {v}.", _CITIES),
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
    """A connected graph on ``0 … n−1``: a random spanning tree plus extra edges (complete for TSP),
    weights 1–9 (unused by the unweighted tasks)."""
    if task == "tsp":
        pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    else:
        order = list(range(n))
        rng.shuffle(order)
        pairs = {tuple(sorted((order[i], order[rng.randrange(i)]))) for i in range(1, n)}
        density = 0.3 if task in ("graph_coloring", "vertex_cover") else 0.15
        pairs |= {(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < density}
        pairs = sorted(pairs)
    return [(u, v, rng.randint(1, 9)) for u, v in pairs]


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
    if n > len(pool):
        raise ValueError(f"the scenario's name pool has {len(pool)} names; {n} nodes asked")
    semantic = rng.sample(list(pool), n)
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
    gold_ir = {"problem_type": scenario.task,
               "graph": {"type": "adjacency_list", "data": data, "directed": False, "weighted": scenario.weighted},
               "parameters": params}
    ir = parse_graph_ir(json.dumps(gold_ir))
    result = solve(ir)  # type: ignore[arg-type]  # the generator only builds valid IR
    if result.status != "ok" or result.answer is None:
        raise ValueError(f"{scenario.name} seed {seed}: the solver returned {result.status}")
    answer, answer_type = _render_answer(scenario.task, asdict(result.answer))
    text_edges = " ".join(scenario.edge.format(u=names[u], v=names[v], w=w) for u, v, w in edges)
    question = scenario.text.format(edges=text_edges, **params)
    return GritItem(f"{scenario.name}-{naming}-{n_nodes}-{seed}", scenario.task, scenario.name, naming, n_nodes,
                    seed, question, answer, answer_type, gold_ir)


def generate_items(count: int, *, sizes: tuple[int, int] = (5, 8), scenarios: Sequence[Scenario] = SCENARIOS,
                   namings: Sequence[str] = NAMINGS, seed: int = 0) -> list[GritItem]:
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
    """Sizes of the GRIT-style splits: ``train`` and ``test`` share scenarios (different graphs),
    ``ood`` uses only the scenarios in ``ood_scenarios``, which training never sees."""

    train: int = 48
    test: int = 24
    ood: int = 24
    sizes: tuple[int, int] = (5, 8)
    ood_scenarios: tuple[str, ...] = ("hospital_transfer", "radio", "museum_tour", "mentors", "outbreak", "hub_airport")
    seed: int = 0

    def __post_init__(self) -> None:
        known = {s.name for s in SCENARIOS}
        unknown = set(self.ood_scenarios) - known
        if unknown:
            raise ValueError(f"unknown OOD scenarios {sorted(unknown)}; known: {sorted(known)}")
        if not known - set(self.ood_scenarios):
            raise ValueError("every scenario is OOD: nothing left to train on")


def build_splits(config: GritConfig = GritConfig()) -> list[dict[str, Any]]:
    """Rows (:meth:`GritItem.to_row`) of the train / test / ood splits; seeds differ per split,
    so no graph is shared between them."""
    ind = [s for s in SCENARIOS if s.name not in config.ood_scenarios]
    ood = [s for s in SCENARIOS if s.name in config.ood_scenarios]
    rows = []
    for split, count, scenarios, offset in (("train", config.train, ind, 0), ("test", config.test, ind, 1),
                                            ("ood", config.ood, ood, 2)):
        items = generate_items(count, sizes=config.sizes, scenarios=scenarios, seed=config.seed * 3 + offset)
        rows += [it.to_row(split) for it in items]
    return rows
