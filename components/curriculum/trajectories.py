"""Graph-CoT teacher trajectories from certified items, and the levels they measure.

A certified item carries Cypher evidence, not a Graph-CoT exploration. :func:`teacher_trajectory`
translates the evidence's typed walk into Graph-CoT calls that it **executes for real** through
:class:`~components.tools.graph_cot.GraphCoT` — ``RetrieveNode`` on each anchor's mention, then
``NeighborCheck`` / ``NodeFeature`` / ``NodeDegree`` rounds — with a short ``<think>`` per round,
and derives the final ``<answer>`` **only from the observations those calls returned** (ids from
``NeighborCheck``, values parsed from the ``NodeFeature`` / ``NodeDegree`` sentences; never from
the certified item). The trajectory is kept only when its answer agrees with the certified answer
(:func:`~components.quizzer.answers.answers_agree`); otherwise the item is excluded with its
reason counted.

What is translated. The evidence query's anchors (``(v:Label {id: $p})``), its relationship hops
in their written directions, and its return (a property of the answer nodes, a count, a ranking by
a property or by a neighbour count, an existence test, a comparison of two or three anchors) are
read from the query text of template-structured evidence (the match / return family comes from
the item's realised axes). Walks start at an anchor; a hop becomes ``NeighborCheck[node, TYPE->]``
(or ``<-TYPE`` against its direction), one call per frontier node.

Exclusions (reason codes, :data:`EXCLUSION_REASONS`): ``not_expressible`` (a family Graph-CoT's
four functions do not express as a bounded walk, e.g. a shortest-path search; or evidence whose
structure is not recognised), ``too_many_rounds`` (more than ``T_MAX`` = 10 calls, e.g. the names
of a large set), ``retrieval_miss`` (``RetrieveNode`` on the mention does not return the anchor),
``truncated`` (a neighbour list hit the row limit), ``call_error`` (a call failed), and
``answer_mismatch`` (the trajectory's answer differs from the certified one).

Measured levels. Each executed round's returned node ids are GraphDancer's ``U_t``; the level is
:func:`~components.curriculum.sampler.level_of` of them (S-round: one id, E-round: several).
:func:`level_confusion` tabulates the evidence-structure estimate against that measurement.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from components.curriculum.sampler import LEVELS, level_of, round_kinds
from components.graph.errors import GraphError
from components.graph.schema import quote_identifier
from components.quizzer.answers import answers_agree, parse_answer
from components.quizzer.candidate import format_answer
from components.tools.env import T_MAX, information_block
from components.tools.graph_cot import GraphCall, GraphCoT
from components.tools.retriever import NodeKey, choose_text_properties

__all__ = [
    "EXCLUSION_REASONS",
    "Exclusion",
    "Round",
    "Trajectory",
    "coverage",
    "level_confusion",
    "teacher_trajectories",
    "teacher_trajectory",
]

EXCLUSION_REASONS: Final[Mapping[str, str]] = {
    "not_expressible": "the evidence is not a bounded walk Graph-CoT's four functions express",
    "too_many_rounds": f"the walk needs more than T_MAX = {T_MAX} calls",
    "retrieval_miss": "RetrieveNode on the anchor's mention does not return the anchor",
    "truncated": "a neighbour list hit the row limit, so the walk cannot see every node",
    "call_error": "a Graph-CoT call failed",
    "answer_mismatch": "the answer derived from the observations differs from the certified answer",
}

_NODE = r"\((\w+)(?::`([^`]+)`)?(?: \{`(\w+)`: \$(\w+)\})?\)"
_EDGE = r"(<-|-)\[:`([^`]+)`\](->|-)"
_TRIPLE = re.compile(rf"{_NODE}{_EDGE}(?={_NODE})")
_ANCHOR = re.compile(r"\((\w+):`([^`]+)` \{`(\w+)`: \$(\w+)\}\)")
_COUNT = re.compile(r"COUNT \{ \((\w+)\)(<-|-)\[:`([^`]+)`\](->|-)\(_x:`[^`]+`\) \}")
_RET_PROP = re.compile(r"RETURN (?:DISTINCT )?(\w+)\.`(\w+)` AS answer")
_RANK = re.compile(r"RETURN (\w+)\.`(\w+)` AS name, (.+?) AS score ORDER BY score DESC")
_PROP = re.compile(r"^(\w+)\.`(\w+)`$")
_WHICH = re.compile(r"CASE WHEN (.+) > (.+?) THEN \w+\.`(\w+)`")
_AGG = re.compile(r"RETURN (round\()?(avg|sum|min|max)\(\w+\.`(\w+)`\)(?:, (\d+)\))? AS answer", re.IGNORECASE)


class _Excluded(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class Round:
    """One executed call with its reasoning line."""

    think: str
    call: GraphCall

    @property
    def action(self) -> str:
        return f"{self.call.function}[{', '.join(self.call.args)}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "think": self.think,
            "action": self.action,
            "observation": self.call.observation,
            "node_ids": list(self.call.node_ids),
        }


@dataclass(frozen=True)
class Trajectory:
    """A Graph-CoT exploration that answers a certified item from its own observations."""

    item_id: str
    question: str
    family: str
    rounds: tuple[Round, ...]
    answer: Any
    answer_type: str
    final_think: str

    @property
    def answer_text(self) -> str:
        return format_answer(self.answer)

    @property
    def returned(self) -> list[list[str]]:
        """``U_t`` per round: the node ids each call returned."""
        return [list(r.call.node_ids) for r in self.rounds]

    @property
    def level(self) -> str:
        return level_of(self.returned)

    def steps(self) -> list[str]:
        """The model's steps in the tag protocol, one per round, then the answer step."""
        out = [f"<think>{r.think}</think><graph>{r.action}</graph>" for r in self.rounds]
        return out + [f"<think>{self.final_think}</think><answer>{self.answer_text}</answer>"]

    def transcript(self) -> list[dict[str, str]]:
        """Alternating model / environment turns (``role`` ``assistant`` / ``environment``)."""
        turns: list[dict[str, str]] = []
        for step, r in zip(self.steps(), self.rounds, strict=False):
            turns += [
                {"role": "assistant", "content": step},
                {"role": "environment", "content": information_block(r.call.observation)},
            ]
        return turns + [{"role": "assistant", "content": self.steps()[-1]}]

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "family": self.family,
            "rounds": [r.to_dict() for r in self.rounds],
            "answer": self.answer_text,
            "final_think": self.final_think,
            "level": self.level,
            "round_kinds": round_kinds(self.returned),
        }


@dataclass(frozen=True)
class Exclusion:
    item_id: str
    family: str
    reason: str
    detail: str = ""


@dataclass
class _Walk:
    """The calls of one trajectory under construction."""

    api: GraphCoT
    max_rounds: int
    rounds: list[Round] = field(default_factory=list)

    def call(self, think: str, function: str, *args: str) -> GraphCall:
        if len(self.rounds) >= self.max_rounds:
            raise _Excluded("too_many_rounds", f"more than {self.max_rounds} calls")
        result = self.api.call(function, args)
        if not result.ok:
            raise _Excluded("call_error", f"{function}{list(args)}: {result.error.detail if result.error else ''}")
        self.rounds.append(Round(think, result))
        return result

    def retrieve(self, label: str, node_id: str) -> str:
        """``RetrieveNode`` on the anchor's mention; the returned id that is the anchor."""
        mention = _mention(self.api, label, node_id)
        want = self.api.render_id(NodeKey(label, str(node_id)))
        got = self.call(f'I need the node of "{mention}".', "RetrieveNode", mention)
        if want not in got.node_ids:
            raise _Excluded("retrieval_miss", f"RetrieveNode[{mention}] returned {list(got.node_ids)}, not {want}")
        return want

    def neighbours(self, node: str, hop: tuple[str, str]) -> list[str]:
        rel, arg = hop[0], _neighbor_type(hop)
        got = self.call(f"Next, the {rel} neighbours of {node}.", "NeighborCheck", node, arg)
        if got.truncated:
            raise _Excluded("truncated", f"NeighborCheck[{node}, {arg}] was cut at the row limit")
        return list(got.node_ids)

    def feature(self, node: str, prop: str) -> str:
        got = self.call(f"I need the {prop} of {node}.", "NodeFeature", node, prop)
        return _after_are(got.observation)

    def degree(self, node: str, hop: tuple[str, str]) -> int:
        rel, arg = hop[0], _neighbor_type(hop)
        got = self.call(f"I need how many {rel} neighbours {node} has.", "NodeDegree", node, arg)
        return int(_after_are(got.observation))


def _neighbor_type(hop: tuple[str, str]) -> str:
    """A ``(type, direction)`` hop as Graph-CoT's directed neighbour type: ``TYPE->`` / ``<-TYPE``."""
    rel, direction = hop
    return f"{rel}->" if direction == "out" else f"<-{rel}"


def _after_are(observation: str) -> str:
    """The value in ``"The … are: <value>."``."""
    _, _, value = observation.partition(" are: ")
    return value[:-1] if value.endswith(".") else value


def _mention(api: GraphCoT, label: str, node_id: str) -> str:
    """The anchor's name as a question mentions it (the label's first name-like property)."""
    props = choose_text_properties(api.schema).get(label) or ()
    if not props:
        return str(node_id)
    pk = api.schema.labels[label].primary_key
    node, name = quote_identifier(label), quote_identifier(props[0])
    rows = api.query.run(
        f"MATCH (n:{node}) WHERE n.{quote_identifier(pk)} = $id RETURN n.{name} AS v",
        {"id": node_id},
        limit=1,
    ).rows
    return str(rows[0][0]) if rows and rows[0][0] is not None else str(node_id)


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() else value


class _Evidence:
    """The structure of one template-shaped evidence query."""

    def __init__(self, query: str, params: Mapping[str, Any]) -> None:
        self.query = query
        self.params = dict(params)
        self.anchors: dict[str, tuple[str, Any]] = {}  # var -> (label, node id)
        for var, label, _prop, param in _ANCHOR.findall(query):
            if param in self.params:
                self.anchors[var] = (label, self.params[param])
        self.hops: list[tuple[str, str, str, str]] = []  # (a, rel, b, direction seen from a)
        for m in _TRIPLE.finditer(query):
            a, _, _, _, left, rel, right = m.groups()[:7]
            b = m.group(8)
            if left == "<-" and right == "-":
                self.hops.append((a, rel, b, "in"))
            elif left == "-" and right == "->":
                self.hops.append((a, rel, b, "out"))
            else:
                raise _Excluded("not_expressible", "an undirected relationship pattern")
        self.excludes_start = "<> $start" in query

    def hop(self, src: str, dst: str) -> tuple[str, str]:
        """The hop from variable ``src`` to ``dst`` as ``(type, direction from src)``."""
        for a, rel, b, direction in self.hops:
            if (a, b) == (src, dst):
                return rel, direction
            if (b, a) == (src, dst):
                return rel, "out" if direction == "in" else "in"
        raise _Excluded("not_expressible", f"no hop {src} → {dst} in the evidence")

    def anchor(self, var: str) -> tuple[str, Any]:
        if var not in self.anchors:
            raise _Excluded("not_expressible", f"no anchor {var!r}")
        return self.anchors[var]

    def walk_vars(self, start: str) -> list[str]:
        """The variables from ``start`` along the hops (a chain), e.g. ``[s, m, x]``."""
        chain, seen = [start], {start}
        while True:
            nxt = [
                b if a == chain[-1] else a
                for a, _, b, _ in self.hops
                if chain[-1] in (a, b) and (b if a == chain[-1] else a) not in seen
            ]
            if not nxt:
                return chain
            chain.append(nxt[0])
            seen.add(nxt[0])


def _score_of(walk: _Walk, node: str, expr: str) -> float:
    """A comparison / ranking score: ``v.prop`` or ``COUNT { (v)-[:T]-(_x) }`` for ``node``."""
    prop = _PROP.match(expr.strip())
    if prop:
        return _number(walk.feature(node, prop.group(2)))
    count = _COUNT.search(expr)
    if count:
        _v, left, rel, _right = count.groups()
        return walk.degree(node, (rel, "in" if left == "<-" else "out"))
    raise _Excluded("not_expressible", f"score {expr!r}")


def _names(walk: _Walk, nodes: Iterable[str], prop: str) -> list[str]:
    return [walk.feature(n, prop) for n in nodes]


def _frontier(walk: _Walk, ev: _Evidence, chain: Sequence[str], start_node: str) -> list[str]:
    """Follow ``chain`` (variables) from ``start_node``: the distinct nodes at its end."""
    frontier = [start_node]
    for src, dst in zip(chain, chain[1:], strict=False):
        hop = ev.hop(src, dst)
        nxt: dict[str, None] = {}
        for node in frontier:
            nxt.update(dict.fromkeys(walk.neighbours(node, hop)))
        frontier = list(nxt)
    return frontier


def _plan(walk: _Walk, family: str, ev: _Evidence, answer_type: str) -> Any:
    """Run the family's calls; return the answer derived from their observations."""
    q = ev.query
    if family.startswith("shortest"):
        raise _Excluded("not_expressible", "a shortest-path search is not one typed walk")
    if family.startswith("comparison"):
        return _comparison(walk, family, ev, answer_type)
    s_label, s_id = ev.anchor("s")
    s = walk.retrieve(s_label, s_id)
    other = next((v for v in ev.anchors if v != "s"), None)
    if family in ("one_hop_aggregate", "optional_count", "optional_any"):
        x = next(iter(ev.walk_vars("s")[1:2]), None)
        if x is None:
            raise _Excluded("not_expressible", "no hop from the start")
        agg = _AGG.search(q)
        if agg:  # avg / sum / min / max of a property: read it on every neighbour
            values = [walk.feature(n, agg.group(3)) for n in _frontier(walk, ev, ["s", x], s)]
            nums = [_number(v) for v in values if v != "None"]
            if not nums:
                raise _Excluded("answer_mismatch", "no values to aggregate")
            fn = {"avg": lambda v: sum(v) / len(v), "sum": sum, "min": min, "max": max}[agg.group(2).lower()]
            result = fn(nums)
            if not agg.group(1):
                return result
            places = Decimal(1).scaleb(-int(agg.group(4) or 0))  # Cypher's round: half away from zero
            return float(Decimal(repr(result)).quantize(places, rounding=ROUND_HALF_UP))
        n = walk.degree(s, ev.hop("s", x))
        return n > 0 if family == "optional_any" else n
    if family in ("one_hop_boolean", "multi_hop_boolean"):
        o_label, o_id = ev.anchor(other or "")
        o = walk.retrieve(o_label, o_id)
        chain = ev.walk_vars("s")
        reached = _frontier(walk, ev, chain, s)
        return o in reached
    if family.startswith("intersection"):
        o_label, o_id = ev.anchor(other or "")
        o = walk.retrieve(o_label, o_id)
        mid = [v for v in ev.walk_vars("s") if v not in ("s", other)]
        if not mid:
            raise _Excluded("not_expressible", "no shared variable")
        x = mid[0]
        a = _frontier(walk, ev, ["s", x], s)
        b = set(_frontier(walk, ev, [other, x], o))
        both = [n for n in a if n in b]
        return _finish(walk, family, ev, both, answer_type)
    chain = ev.walk_vars("s")
    if family == "multi_hop_rank":
        rank = _RANK.search(q)
        if not rank or len(chain) < 3:
            raise _Excluded("not_expressible", "multi-hop ranking")
        mids = _frontier(walk, ev, chain[:2], s)
        hop = ev.hop(chain[1], chain[2])
        scores = {m: len([n for n in walk.neighbours(m, hop) if not (ev.excludes_start and n == s)]) for m in mids}
        top = max(scores, key=lambda m: scores[m])
        if answer_type == "number":
            return scores[top]
        return walk.feature(top, rank.group(2))
    nodes = _frontier(walk, ev, chain, s)
    if ev.excludes_start:
        nodes = [n for n in nodes if n != s]
    return _finish(walk, family, ev, nodes, answer_type)


def _finish(walk: _Walk, family: str, ev: _Evidence, nodes: list[str], answer_type: str) -> Any:
    """The answer over the walk's end nodes: names, a count, a value, a ranking, existence."""
    q = ev.query
    if family.endswith("_count") or (family.endswith("_aggregate")):
        return len(nodes)
    if family.endswith("_boolean"):
        return bool(nodes)
    rank = _RANK.search(q)
    if family.endswith("_rank"):
        if not rank:
            raise _Excluded("not_expressible", "ranking without a recognised score")
        prop = _PROP.match(rank.group(3).strip())
        if not prop:
            raise _Excluded("not_expressible", f"score {rank.group(3)!r}")
        values = {n: walk.feature(n, prop.group(2)) for n in nodes}
        scores = {n: _number(v) for n, v in values.items() if v != "None"}  # WHERE … IS NOT NULL
        ranked = sorted(scores, key=lambda n: -scores[n])
        if answer_type == "number":
            return scores[ranked[0]]
        if answer_type == "set":
            return _names(walk, ranked[:3], rank.group(2))
        return walk.feature(ranked[0], rank.group(2))
    ret = _RET_PROP.search(q) or re.search(r"collect\(DISTINCT (\w+)\.`(\w+)`\)", q)
    if not ret:
        if "type(" in q:
            raise _Excluded("not_expressible", "the relationship type itself is asked (observations never name it)")
        raise _Excluded("not_expressible", "return clause not recognised")
    prop = ret.group(2)
    if answer_type == "set":
        return _names(walk, nodes, prop)
    if len(nodes) != 1:
        raise _Excluded("answer_mismatch", f"{len(nodes)} answer nodes for a single value")
    value = walk.feature(nodes[0], prop)
    return _number(value) if answer_type == "number" else value


def _comparison(walk: _Walk, family: str, ev: _Evidence, answer_type: str) -> Any:
    q = ev.query
    if family == "comparison_rank":
        ids = ev.params.get("ids") or []
        rank = _RANK.search(q)
        label = re.search(r"MATCH \((\w+):`([^`]+)`\) WHERE \w+\.`\w+` IN \$ids", q)
        if not rank or not label or not ids:
            raise _Excluded("not_expressible", "comparison ranking not recognised")
        lab = label.group(2)
        nodes = [walk.retrieve(lab, i) for i in ids]
        scores = {n: _score_of(walk, n, rank.group(3)) for n in nodes}
        top = max(nodes, key=lambda n: scores[n])
        return scores[top] if answer_type == "number" else walk.feature(top, rank.group(2))
    if family == "comparison_difference_set":
        s_label, s_id = ev.anchor("s")
        b_var = next((v for v in ev.anchors if v != "s"), None)
        if b_var is None:
            raise _Excluded("not_expressible", "no second anchor")
        s = walk.retrieve(s_label, s_id)
        b_label, b_id = ev.anchor(b_var)
        b = walk.retrieve(b_label, b_id)
        x = next((v for v in ev.walk_vars("s")[1:]), None)
        if x is None:
            raise _Excluded("not_expressible", "no hop from the start")
        theirs = set(_frontier(walk, ev, [b_var, x], b))
        mine = [n for n in _frontier(walk, ev, ["s", x], s) if n not in theirs]
        return _finish(walk, "comparison_set", ev, mine, answer_type)
    nodes = {}
    for var in ("a", "b"):
        label, node_id = ev.anchor(var)
        nodes[var] = walk.retrieve(label, node_id)
    ret = q.split(" RETURN ", 1)[-1].rsplit(" AS answer", 1)[0]
    if family == "comparison_which":
        which = _WHICH.search(q)
        if not which:
            raise _Excluded("not_expressible", "comparison not recognised")
        va = _score_of(walk, nodes["a"], which.group(1))
        vb = _score_of(walk, nodes["b"], which.group(2))
        return walk.feature(nodes["a"] if va > vb else nodes["b"], which.group(3))
    if ret.startswith("abs(") and " - " in ret:
        left, right = ret[4:-1].split(" - ", 1)
        return abs(_score_of(walk, nodes["a"], left) - _score_of(walk, nodes["b"], right))
    if " > " in ret:
        left, right = ret.split(" > ", 1)
        return _score_of(walk, nodes["a"], left) > _score_of(walk, nodes["b"], right)
    raise _Excluded("not_expressible", f"comparison {ret!r}")


def _family(item: Mapping[str, Any]) -> str:
    meta = item.get("meta") or item.get("meta_json") or {}
    if isinstance(meta, str):
        meta = json.loads(meta)
    return str(meta.get("template") or "")


def _evidence(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    ev = item.get("evidence")
    if ev is None and item.get("evidence_json"):
        ev = json.loads(item["evidence_json"])
    return list(ev or [])


def _answer_value(item: Mapping[str, Any]) -> Any:
    if "answer_value" in item:
        return item["answer_value"]
    return json.loads(item["answer_value_json"])


def teacher_trajectory(item: Mapping[str, Any], api: GraphCoT, *, max_rounds: int = T_MAX) -> Trajectory | Exclusion:
    """The Graph-CoT trajectory of one certified item, or why it has none (module docstring).

    ``item`` is a certified row (``evidence`` / ``evidence_json``, ``meta`` / ``meta_json`` with
    the template family, ``answer_type``, ``answer_value`` / ``answer_value_json``, ``id``,
    ``question``). Never raises on an item: a failure is an :class:`Exclusion`.
    """
    item_id, family = str(item.get("id", "")), "unknown"
    answer_type = str(item.get("answer_type", ""))
    walk = _Walk(api, max_rounds)
    try:
        family = _family(item) or "unknown"
        evidence = _evidence(item)
        if family == "unknown" or len(evidence) != 1 or not isinstance(evidence[0], Mapping):
            raise _Excluded("not_expressible", "no template-structured single evidence query")
        ev = _Evidence(str(evidence[0].get("query", "")), evidence[0].get("params") or {})
        derived = _plan(walk, family, ev, answer_type)
        value = parse_answer(format_answer(derived), answer_type) if answer_type != "set" else list(derived)
        if not answers_agree(value, _answer_value(item), answer_type):
            raise _Excluded("answer_mismatch", f"trajectory says {format_answer(derived)!r}")
    except _Excluded as ex:
        return Exclusion(item_id, family, ex.reason, ex.detail)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, StopIteration, GraphError) as exc:
        # malformed item JSON, an observation that would not parse, a failed lookup of a mention
        return Exclusion(item_id, family, "call_error", f"{type(exc).__name__}: {exc}")
    return Trajectory(
        item_id=item_id,
        question=str(item.get("question", "")),
        family=family,
        rounds=tuple(walk.rounds),
        answer=value,
        answer_type=answer_type,
        final_think="The observations give the answer.",
    )


def teacher_trajectories(
    items: Iterable[Mapping[str, Any]], api: GraphCoT, *, max_rounds: int = T_MAX
) -> tuple[list[Trajectory], list[Exclusion]]:
    out: list[Trajectory] = []
    excluded: list[Exclusion] = []
    for item in items:
        got = teacher_trajectory(item, api, max_rounds=max_rounds)
        (out if isinstance(got, Trajectory) else excluded).append(got)  # type: ignore[arg-type]
    return out, excluded


def coverage(trajectories: Sequence[Trajectory], excluded: Sequence[Exclusion]) -> dict[str, dict[str, Any]]:
    """Per family: items, trajectories, coverage share, exclusions by reason."""
    fams = Counter([t.family for t in trajectories] + [e.family for e in excluded])
    out: dict[str, dict[str, Any]] = {}
    for fam in sorted(fams):
        ok = sum(t.family == fam for t in trajectories)
        reasons = Counter(e.reason for e in excluded if e.family == fam)
        out[fam] = {
            "items": fams[fam],
            "trajectories": ok,
            "coverage": ok / fams[fam],
            "excluded": dict(sorted(reasons.items())),
        }
    return out


def level_confusion(estimated: Mapping[str, str], trajectories: Sequence[Trajectory]) -> dict[str, dict[str, int]]:
    """``{estimated level: {measured level: count}}`` over the items that have a trajectory."""
    table = {e: dict.fromkeys(LEVELS, 0) for e in LEVELS}
    for t in trajectories:
        est = estimated.get(t.item_id)
        if est in table:
            table[est][t.level] += 1
    return table
