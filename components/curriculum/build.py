"""The curriculum table of a certified dataset: a level and a split per admitted item.

Per admitted row: ``level`` (:func:`~components.curriculum.levels.estimate_level`), the round
estimates, ``ood`` (certified items are graph-grounded by construction, so ``False`` unless the
row says otherwise) and ``split`` (:func:`~components.curriculum.splits.entity_grouped_splits`)
over the item's **node keys** (``node:<id>``, the node's primary key), found on the snapshot
graph by :class:`NodeKeys`:

* **anchors** — the start node and every node-id parameter of the evidence queries (a string
  or a list of strings that is some node's id);
* **answers** — for entity / set answers, the nodes whose display property
  (:func:`~components.quizzer.context.display_property`) equals an answer value, on the labels
  the evidence's RETURN names them from (every label when it cannot be told);
* **walked nodes** — every evidence query run again through the read-only query path with the
  ids of its node variables in place of (or, when it aggregates, orders or limits, beside) its
  RETURN: the nodes a multi-hop / intersection / comparison query walks through. A variable an
  aggregation only counts (``count(x)``, or any variable that is not a grouping key of an
  aggregating RETURN) is not keyed, nor are the variables of EXISTS / COUNT { } sub-queries;

**except hubs**: a node with more than :data:`HUB_DEGREE` relationships is never a key (it would
chain most questions into one group). ``entities`` holds an item's keys, ``hub_entities`` the hub
keys it dropped; :func:`curriculum_summary` counts them and lists the keys that cross splits
(none, by construction). So no node a question is about, answers with or walks through —
hubs aside — appears on both sides of a split.

:data:`CURRICULUM_SPLITS` is the ``curriculum_splits`` layer (:func:`build_curriculum_splits`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from cypherast import ast as a

from components.curriculum.levels import estimate_rounds
from components.curriculum.sampler import LEVELS, level_of, level_probabilities
from components.curriculum.splits import SPLITS, entity_grouped_splits
from components.cypher.features import AGGREGATES
from components.cypher.parse import child_nodes, parse_query, render
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.backend import GraphBackend
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema, quote_identifier
from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet, write_parquet

__all__ = [
    "CURRICULUM_SPLITS",
    "HUB_DEGREE",
    "NodeKeys",
    "SplitConfig",
    "build_curriculum",
    "build_curriculum_splits",
    "curriculum_summary",
    "grounded_entities",
    "key_query",
    "training_items",
]

#: A node with more relationships than this (in + out) is a **hub** and never a split key. In the
#: generated academic graph a node's median degree is 2 (authors) to 22 (venues) and the mean
#: ~11; above 50 sit the ~1.5 % of nodes (big venues, much-cited papers, prolific authors) that
#: dozens of questions touch — keying them would chain most of the dataset into one group and
#: leave no test split. What they share across splits is a popular node, not a question's facts.
HUB_DEGREE: Final = 50
#: the per-query time limit of the key queries (degrees, names, walked nodes)
KEY_QUERY_TIMEOUT_MS: Final = 10_000
_KEY_PREFIX: Final = "gd_key_"


def _json(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return default
    return default if value is None else value


def _evidence(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [ev for ev in _json(row.get("evidence_json"), []) or [] if isinstance(ev, Mapping)]


def _anchor_values(row: Mapping[str, Any]) -> list[str]:
    """The start node's id and every string (or list-of-strings element) evidence parameter."""
    start = _json(row.get("start_node_json"), {}) or {}
    out = [str(start["id"])] if start.get("id") is not None else []
    for ev in _evidence(row):
        for v in (ev.get("params") or {}).values():
            values = v if isinstance(v, list) else [v]
            out.extend(x for x in values if isinstance(x, str))
    return list(dict.fromkeys(out))


def grounded_entities(row: Mapping[str, Any]) -> list[str]:
    """The node keys a row names without the graph: its start node and the string parameters of
    its evidence (``node:<id>``). The split itself keys by :class:`NodeKeys`, which also checks
    these are node ids, adds answer and walked nodes and drops hubs."""
    return [f"node:{v}" for v in _anchor_values(row)]


# --------------------------------------------------------------------------------------------
# Walked nodes: an evidence query with the ids of its node variables returned
# --------------------------------------------------------------------------------------------

#: sub-query nodes: their variables are local (existence-checked or counted, never walked)
_SUBQUERIES = (a.PatternPredicate, a.CountSubquery, a.PatternComprehension, a.CallSubquery)


def _node_patterns(node: a.AstNode) -> Iterator[a.NodePattern]:
    """Node patterns of a MATCH clause's own pattern (not of sub-queries in its WHERE)."""
    if isinstance(node, a.NodePattern):
        yield node
        return
    for child in child_nodes(node):
        if not isinstance(child, (*_SUBQUERIES, a.Where)):
            yield from _node_patterns(child)


def _label_of(pattern: a.NodePattern) -> str | None:
    labels = pattern.args.get("labels")
    if isinstance(labels, a.LabelExpression) and labels.args.get("expression") is None:
        names = list(labels.args.get("labels") or [])
        return str(names[0]) if len(names) == 1 else None
    return None


def _references(node: a.AstNode, in_aggregate: bool = False) -> Iterator[tuple[str, bool]]:
    """``(identifier, inside an aggregate call)`` for every identifier in an expression."""
    if isinstance(node, a.Identifier):
        yield str(node.this), in_aggregate
        return
    if isinstance(node, a.Alias):
        yield from _references(node.this, in_aggregate)
        return
    inside = in_aggregate or (isinstance(node, a.FunctionCall) and str(node.name).lower() in AGGREGATES)
    for child in child_nodes(node):
        yield from _references(child, inside)


def _aggregates(node: a.AstNode) -> bool:
    if isinstance(node, a.FunctionCall) and str(node.name).lower() in AGGREGATES:
        return True
    return any(_aggregates(c) for c in child_nodes(node) if not isinstance(c, _SUBQUERIES))


@dataclass(frozen=True)
class KeyQuery:
    """An evidence query rewritten to return its walked nodes' ids (:func:`key_query`):
    ``text`` (Neo4j dialect), ``columns`` (the id columns), ``counted`` (node variables an
    aggregation only counts: not keyed; anchors with a property map are keyed by their
    parameter, so not listed) and ``labels`` (variable → label, where one is known)."""

    text: str
    columns: tuple[str, ...]
    counted: tuple[str, ...]
    labels: Mapping[str, str | None]


def key_query(query: str, schema: GraphSchema | None = None) -> KeyQuery | None:
    """The evidence query ``query`` with the ids of the node variables bound at its RETURN
    returned, or ``None`` when there is none to return (or the query is a UNION / not a plain
    read query).

    Node variables are those of its MATCH / OPTIONAL MATCH patterns still in scope at the
    RETURN (a WITH passes on the variables it projects, renamed as it renames them). When the
    RETURN aggregates, only its grouping keys are walked — every other variable is only counted
    — and their ids are ``collect(DISTINCT v.id)`` columns added beside the original ones (same
    groups, order and limit). When it orders / limits without aggregating, the same columns are
    added (the original columns group the rows: the same top rows). Otherwise the RETURN is
    replaced by ``RETURN DISTINCT v.id …``.

    >>> kq = key_query("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper)-[:PUBLISHED_IN]->(v:Venue) RETURN v.name")
    >>> kq.text.split(" RETURN ")[1]
    'DISTINCT a.id AS gd_key_0, p.id AS gd_key_1, v.id AS gd_key_2'
    >>> kq = key_query("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper) RETURN count(p) AS n")
    >>> kq is None, key_query("MATCH (a:Author {id: $id})-[:WROTE]->(p:Paper) RETURN a.name, count(p)").counted
    (True, ('p',))
    """
    try:
        tree = parse_query(query).tree.copy()
    except GraphError:
        return None
    body = tree.this
    if not isinstance(body, a.Query) or not body.clauses or not isinstance(body.clauses[-1], a.Return):
        return None
    scope: dict[str, str | None] = {}  # variable -> label (None: unknown or several)
    anchored: set[str] = set()  # variables with an inline property map (keyed by its parameter)
    for clause in body.clauses[:-1]:
        if isinstance(clause, a.Match):
            for pattern in _node_patterns(clause.pattern):
                var = pattern.args.get("variable")
                if var is None:
                    continue
                name, label = str(var.this), _label_of(pattern)
                if isinstance(pattern.args.get("properties"), a.Map):
                    anchored.add(name)
                if name in scope and scope[name] != label:
                    label = scope[name] or label
                scope[name] = label
        elif isinstance(clause, a.With):
            items = list(clause.args.get("expressions") or [])
            if any(isinstance(i, a.Star) for i in items):
                continue
            passed: dict[str, str | None] = {}
            for item in items:
                src, dst = (item.this, item.alias) if isinstance(item, a.Alias) else (item, item)
                if isinstance(src, a.Identifier) and isinstance(dst, a.Identifier) and str(src.this) in scope:
                    passed[str(dst.this)] = scope[str(src.this)]
            scope = passed
        elif isinstance(clause, _SUBQUERIES):
            return None
    ret = body.clauses[-1]
    items = list(ret.args.get("expressions") or [])
    if not scope:
        return None
    aggregating = any(_aggregates(i) for i in items)
    if any(isinstance(i, a.Star) for i in items):
        grouped = set(scope)
    else:
        grouped = {v for i in items for v, agg in _references(i) if not agg and v in scope}
    walked = [v for v in scope if v in grouped] if aggregating else list(scope)
    counted = tuple(v for v in scope if v not in walked and v not in anchored)
    if not walked:
        return None
    taken = {str(i.alias.this) for i in items if isinstance(i, a.Alias)}
    names: list[str] = []
    for k in range(len(walked) + len(taken)):
        if f"{_KEY_PREFIX}{k}" not in taken:
            names.append(f"{_KEY_PREFIX}{k}")
    names = names[: len(walked)]

    def key(v: str) -> a.AstNode:
        label = scope[v]
        pk = schema.labels[label].primary_key if schema is not None and label in schema.labels else "id"
        return a.Property(this=a.Identifier(this=v), name=pk)

    shaped = aggregating or ret.args.get("limit") is not None or ret.args.get("skip") is not None
    if shaped:
        extra = [
            a.Alias(
                this=a.FunctionCall(name="collect", expressions=[key(v)], distinct=True), alias=a.Identifier(this=n)
            )
            for v, n in zip(walked, names, strict=True)
        ]
        new_return = a.Return(
            expressions=[*items, *extra],
            distinct=ret.args.get("distinct"),
            order=ret.args.get("order"),
            skip=ret.args.get("skip"),
            limit=ret.args.get("limit"),
        )
    else:
        new_return = a.Return(
            expressions=[a.Alias(this=key(v), alias=a.Identifier(this=n)) for v, n in zip(walked, names, strict=True)],
            distinct=True,
        )
    text = render(a.Cypher(this=a.Query(clauses=[*body.clauses[:-1], new_return])))
    return KeyQuery(text, tuple(names), counted, {v: scope[v] for v in scope})


def _answer_labels(queries: Sequence[str], schema: GraphSchema) -> set[str]:
    """The labels an answer value is named from: the labels of the variables whose display
    property the evidence's RETURN columns read (``RETURN x.title`` of ``(x:Paper)``)."""
    from components.quizzer.context import display_property  # the quizzer package is heavy to import

    out: set[str] = set()
    for query in queries:
        try:
            body = parse_query(query).tree.this
        except GraphError:
            continue
        if not isinstance(body, a.Query) or not body.clauses or not isinstance(body.clauses[-1], a.Return):
            continue
        labels: dict[str, str | None] = {}
        for clause in body.clauses:
            if isinstance(clause, a.Match):
                for pattern in _node_patterns(clause.pattern):
                    var = pattern.args.get("variable")
                    if var is not None and _label_of(pattern):
                        labels.setdefault(str(var.this), _label_of(pattern))
        for item in body.clauses[-1].args.get("expressions") or []:
            for node in _properties(item):
                label = labels.get(str(node.this.this))
                if label in schema.labels and str(node.name) == display_property(schema, label):
                    out.add(label)
    return out


def _properties(node: a.AstNode) -> Iterator[a.Property]:
    if isinstance(node, a.Property) and isinstance(node.this, a.Identifier):
        yield node
    for child in child_nodes(node):
        yield from _properties(child)


# --------------------------------------------------------------------------------------------
# Node keys of certified rows
# --------------------------------------------------------------------------------------------


@dataclass
class ItemKeys:
    """One item's node keys by where they come from, and the hub keys it dropped."""

    anchors: set[str] = field(default_factory=set)
    answers: set[str] = field(default_factory=set)
    walked: set[str] = field(default_factory=set)
    hubs: set[str] = field(default_factory=set)

    @property
    def keys(self) -> list[str]:
        return sorted(f"node:{i}" for i in (self.anchors | self.answers | self.walked) - self.hubs)

    @property
    def hub_keys(self) -> list[str]:
        return sorted(f"node:{i}" for i in self.hubs)


class NodeKeys:
    """The node keys of certified rows on one graph (module docstring): ``keys(rows)`` →
    ``{row id: ItemKeys}``; ``report`` counts what it found and skipped. Every query is
    parameterised and runs through :class:`~components.cypher.query_path.ReadOnlyQueryPath`
    (labels and property names come from the schema, quoted)."""

    def __init__(self, backend: GraphBackend, schema: GraphSchema | None = None, *, hub_degree: int = HUB_DEGREE):
        self.schema = schema or backend.schema()
        self.path = ReadOnlyQueryPath(backend, schema=self.schema)
        self.hub_degree = hub_degree
        self._degree: dict[str, int] = {}
        self.report: Counter[str] = Counter()

    def _run(self, query: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return list(self.path.run(query, params, timeout_ms=KEY_QUERY_TIMEOUT_MS).rows)

    def degrees(self, ids: Sequence[str]) -> dict[str, int]:
        """``{id: degree}`` of the ids that are some node's primary key (the largest degree when
        several labels share one id); cached."""
        todo = sorted({i for i in ids if i not in self._degree})
        if todo:
            found: dict[str, int] = {}
            for label, node in self.schema.labels.items():
                pk = quote_identifier(node.primary_key)
                q = (
                    f"MATCH (n:{quote_identifier(label)}) WHERE n.{pk} IN $ids "
                    f"RETURN n.{pk} AS id, COUNT {{ (n)--() }} AS degree"
                )
                for node_id, degree in self._run(q, {"ids": todo}):
                    found[str(node_id)] = max(found.get(str(node_id), 0), int(degree))
            for i in todo:
                self._degree[i] = found.get(i, -1)  # -1: no such node
        return {i: self._degree[i] for i in ids if self._degree.get(i, -1) >= 0}

    def named(self, values: Sequence[str], labels: Sequence[str]) -> dict[str, set[str]]:
        """``{value: node ids}`` of the nodes of ``labels`` whose display property is a value."""
        from components.quizzer.context import display_property

        out: dict[str, set[str]] = {}
        for label in labels:
            node = self.schema.labels[label]
            prop, pk = quote_identifier(display_property(self.schema, label)), quote_identifier(node.primary_key)
            q = f"MATCH (n:{quote_identifier(label)}) WHERE n.{prop} IN $values RETURN n.{prop} AS value, n.{pk} AS id"
            for value, node_id in self._run(q, {"values": list(values)}):
                out.setdefault(str(value), set()).add(str(node_id))
        return out

    def walked(self, evidence: Mapping[str, Any]) -> set[str]:
        """The ids of the nodes an evidence query's walked variables bind (:func:`key_query`)."""
        kq = key_query(str(evidence.get("query") or ""), self.schema)
        if kq is None:
            self.report["queries_without_walked_variables"] += 1
            return set()
        self.report["counted_variables"] += len(kq.counted)
        try:
            prepared = self.path.prepared(kq.text)
            params = {k: v for k, v in (evidence.get("params") or {}).items() if k in prepared.parameters}
            result = self.path.run(kq.text, params, timeout_ms=KEY_QUERY_TIMEOUT_MS)
        except GraphError:
            self.report["key_queries_failed"] += 1
            return set()
        self.report["key_queries"] += 1
        cols = [result.columns.index(c) for c in kq.columns if c in result.columns]
        out: set[str] = set()
        for row in result.rows:
            for c in cols:
                values = row[c] if isinstance(row[c], list) else [row[c]]
                out.update(str(v) for v in values if v is not None)
        return out

    def keys(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, ItemKeys]:
        out: dict[str, ItemKeys] = {}
        for row in rows:
            item = ItemKeys()
            anchors = _anchor_values(row)
            known = self.degrees(anchors)
            item.anchors = set(known)
            self.report["anchor_values_not_node_ids"] += len(set(anchors) - set(known))
            evidence = _evidence(row)
            for ev in evidence:
                item.walked |= self.walked(ev)
            if row.get("answer_type") in ("entity", "set"):
                value = _json(row.get("answer_value_json"), None)
                values = sorted({v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)})
                if values:
                    labels = _answer_labels([str(ev.get("query") or "") for ev in evidence], self.schema)
                    named = self.named(values, sorted(labels) or sorted(self.schema.labels))
                    self.report["answer_values"] += len(values)
                    self.report["answer_values_unresolved"] += sum(v not in named for v in values)
                    item.answers = set().union(*named.values()) if named else set()
            everything = item.anchors | item.answers | item.walked
            degree = self.degrees(sorted(everything))
            item.hubs = {i for i in everything if degree.get(i, 0) > self.hub_degree}
            out[str(row["id"])] = item
        return out


def node_keys(
    rows: Sequence[Mapping[str, Any]], graph: str | Path | GraphBackend, schema: GraphSchema | None = None
) -> tuple[dict[str, ItemKeys], dict[str, int]]:
    """:class:`NodeKeys` of ``rows`` on ``graph`` (a location to open, or an open backend) and
    its report."""
    if isinstance(graph, (str, Path)):
        from components.graph import open_backend

        backend = open_backend(str(graph))
        try:
            keyer = NodeKeys(backend, schema)
            return keyer.keys(rows), dict(keyer.report)
        finally:
            backend.close()
    keyer = NodeKeys(graph, schema)
    return keyer.keys(rows), dict(keyer.report)


def build_curriculum(
    rows: Sequence[Mapping[str, Any]],
    schema: GraphSchema,
    graph: str | Path | GraphBackend,
    *,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    report: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One item per admitted row of ``rows``, split by its node keys on ``graph`` (the snapshot
    the rows were certified on: a location or an open backend); an admitted item a noisy pool
    injected (:func:`components.quizzer.noisy.injected`: a changed question the judge did not
    stop, say) is never a validation or test question — its gold answer is wrong on purpose —
    and its group trains. A domain's held-out questions (:func:`components.quizzer.noisy.held_out`,
    the ones that certified strict) are then the only validation and test items, and an admitted
    item sharing a node with one is left out (``report["left_out_sharing_held_out"]``).
    ``report``, when given, receives :class:`NodeKeys`' counts."""
    from components.quizzer.noisy import held_out, injected

    evaluation = [r for r in rows if held_out(r) and r.get("ok") and r.get("status") == "strict"]
    admitted = [r for r in rows if r.get("admitted")] + evaluation
    keys, counts = node_keys(admitted, graph, schema)
    splits = entity_grouped_splits(
        [(r["id"], keys[str(r["id"])].keys) for r in admitted],
        fractions=fractions,
        seed=seed,
        ood=[r["id"] for r in admitted if r.get("ood")],
        train_only=[r["id"] for r in admitted if injected(r)],
        held_out=[r["id"] for r in evaluation],
    )
    if evaluation:
        counts["held_out_questions"] = len(evaluation)
        counts["left_out_sharing_held_out"] = len(admitted) - len(splits)
    if report is not None:
        report.update(counts)
    out = []
    for r in admitted:
        if r["id"] not in splits:
            continue
        start = _json(r.get("start_node_json"), {}) or {}
        rounds = estimate_rounds(_json(r.get("evidence_features_json"), []), schema, start.get("label"))
        item_keys = keys[str(r["id"])]
        out.append(
            {
                "id": r["id"],
                "question": r["question"],
                "answer": r["answer"],
                "answer_type": r["answer_type"],
                "level": level_of(rounds),
                "rounds": len(rounds),
                "e_rounds": sum(u > 1 for u in rounds),
                "ood": bool(r.get("ood", False)),
                "split": splits[r["id"]],
                "entities": item_keys.keys,
                "hub_entities": item_keys.hub_keys,
            }
        )
    return out


def curriculum_summary(items: Sequence[Mapping[str, Any]], total_steps: int = 100) -> dict[str, Any]:
    """Counts by level × split, node keys crossing splits (must be none), the hub keys the split
    ignored (:data:`HUB_DEGREE`) and the sampler's level probabilities at the start, middle and
    end of a stage with the train levels present."""
    counts = Counter((i["level"], i["split"]) for i in items)
    where: dict[str, set[str]] = {}
    for i in items:
        for e in i["entities"]:
            where.setdefault(e, set()).add(i["split"])
    hubs = Counter(e for i in items for e in i.get("hub_entities") or ())
    train = {lv for lv in LEVELS if counts[(lv, "train")]}
    available = [lv in train for lv in LEVELS]
    schedule = {}
    if any(available):
        for name, t in (("start", 0), ("middle", (total_steps - 1) // 2), ("end", total_steps - 1)):
            schedule[name] = dict(zip(LEVELS, level_probabilities(t, total_steps, available=available), strict=True))
    return {
        "items": len(items),
        "by_level_split": {f"{lv}/{sp}": counts[(lv, sp)] for lv in LEVELS for sp in SPLITS},
        "crossing_entities": sorted(e for e, s in where.items() if len(s) > 1),
        "keys": {
            "hub_degree": HUB_DEGREE,
            "node_keys": len(where),
            "hub_keys_dropped": len(hubs),
            "hub_key_uses_dropped": sum(hubs.values()),
            "largest_hubs": [{"key": k, "items": n} for k, n in hubs.most_common(5)],
        },
        "sampler": schedule,
    }


def split_items(items: Sequence[Mapping[str, Any]], split: str) -> list[Mapping[str, Any]]:
    """The items of ``split``, OOD items excluded."""
    return [i for i in items if i["split"] == split and not i["ood"]]


def training_items(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The items a trainer may use: the train split, OOD items never."""
    return split_items(items, "train")


DEFAULT_FRACTIONS: Final = (0.8, 0.1, 0.1)


@dataclass(frozen=True)
class SplitConfig:
    """A domain YAML's ``curriculum:`` section: the split seed and the train / validation / test
    shares the entity-grouped split aims at (a larger test share when grouping leaves too few
    test questions)."""

    seed: int = 0
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS
    #: translate admitted items into executed Graph-CoT teacher trajectories
    #: (:mod:`components.curriculum.trajectories`) and use their measured level where one exists —
    #: on by default: GraphDancer's default environment (``train.dancer_env: graph_cot``) warm-starts
    #: on them; a domain that runs GraphDancer in the Python + Cypher sandbox may turn them off
    trajectories: bool = True

    def __post_init__(self) -> None:
        fractions = tuple(float(f) for f in self.fractions)
        if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-9:
            raise ValueError(f"fractions must be three non-negative shares summing to 1, got {list(self.fractions)}")
        object.__setattr__(self, "fractions", fractions)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> SplitConfig:
        return cls(**checked_options(cls, raw, "curriculum"))

    def params(self) -> dict[str, Any]:
        """The fingerprint's parameters (the default shares leave earlier fingerprints as they were;
        ``trajectories: true`` is named, so splits built without them are not reused)."""
        return {
            "seed": self.seed,
            **({} if self.fractions == DEFAULT_FRACTIONS else {"fractions": list(self.fractions)}),
            **({"trajectories": True} if self.trajectories else {}),
        }


def build_curriculum_splits(
    inputs: Mapping[str, Artifact], config: SplitConfig | int, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``curriculum_splits`` layer: :func:`build_curriculum` of the ``certified`` input's
    rows with the ``snapshot`` input's schema, as ``curriculum.parquet``; the summary is
    :func:`curriculum_summary`. ``config`` may be a bare seed."""
    config = _curriculum_config(config)
    schema = GraphSchema.from_json(inputs["snapshot"].summary["schema"])
    rows = read_parquet(str(inputs["certified"].path))
    report: dict[str, Any] = {}
    items = build_curriculum(
        rows, schema, str(inputs["snapshot"].path), fractions=config.fractions, seed=config.seed, report=report
    )
    summary = curriculum_summary(items)
    summary["keys"].update(report)
    ctx.log(
        f"split keys: {summary['keys']['node_keys']} nodes; {summary['keys']['hub_keys_dropped']} hubs "
        f"(> {HUB_DEGREE} relationships) dropped from {summary['keys']['hub_key_uses_dropped']} item keys"
    )
    if "held_out_questions" in report:
        ctx.log(
            f"held-out set: {report['held_out_questions']} validation / test questions; "
            f"{report['left_out_sharing_held_out']} admitted items left out (they share a node with one)"
        )
    counts = {"items": len(items)}
    if config.trajectories:
        summary["trajectories"] = measure_levels(items, rows, str(inputs["snapshot"].path), ctx)
        counts["trajectories"] = summary["trajectories"]["trajectories"]
        summary["by_level_split"] = curriculum_summary(items)["by_level_split"]
    path = write_parquet(items, out_dir / "curriculum.parquet")
    return CURRICULUM_SPLITS.artifact(inputs, config, ctx, path=path, counts=counts, summary=summary)


def measure_levels(
    items: list[dict[str, Any]], rows: Sequence[Mapping[str, Any]], db_location: str, ctx: BuildContext | None = None
) -> dict[str, Any]:
    """Build every admitted item's Graph-CoT teacher trajectory on the snapshot; where one exists,
    its measured level replaces the estimate (``level_source`` ``"measured"``, the estimate kept
    as ``estimated_level``, the trajectory as ``trajectory_json``). Returns coverage per family,
    exclusions by reason and the estimated × measured confusion matrix."""
    from components.curriculum.trajectories import coverage, level_confusion, teacher_trajectories
    from components.graph import open_backend
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    by_id = {r["id"]: r for r in rows}
    backend = open_backend(db_location)
    try:
        index = NodeIndex.open(backend, shared_embedder(), progress=False)
        trajectories, excluded = teacher_trajectories([by_id[i["id"]] for i in items], GraphCoT(backend, index=index))
    finally:
        backend.close()
    measured = {t.item_id: t for t in trajectories}
    estimated = {i["id"]: i["level"] for i in items}
    for item in items:
        item["estimated_level"] = item["level"]
        traj = measured.get(item["id"])
        item["level_source"] = "measured" if traj else "estimated"
        record = traj.to_dict() if traj else None
        item["trajectory_json"] = json.dumps(record, ensure_ascii=False)
        if record:
            item["level"] = record["level"]
            item["rounds"] = len(record["rounds"])
            item["e_rounds"] = record["round_kinds"].count("E")
    if ctx is not None:
        ctx.log(f"teacher trajectories: {len(trajectories)} of {len(items)} items ({len(excluded)} excluded)")
    return {
        "trajectories": len(trajectories),
        "coverage": coverage(trajectories, excluded),
        "excluded": dict(Counter(e.reason for e in excluded)),
        "confusion": level_confusion(estimated, trajectories),
    }


def _curriculum_config(config: SplitConfig | int) -> SplitConfig:
    return config if isinstance(config, SplitConfig) else SplitConfig(seed=int(config))


CURRICULUM_SPLITS = Layer(
    "curriculum_splits", build_curriculum_splits, lambda config: _curriculum_config(config).params()
)
