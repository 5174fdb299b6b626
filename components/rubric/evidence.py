"""GraphCert's evidence rubric: how structurally alike two sets of marked Cypher queries are.

Every query is first reduced by the shared deriver (:func:`components.cypher.features.derive`),
which removes variable names, aliases and clause order. Then, for one gold and one predicted
query::

    S_pair = 0.55·S_shape + 0.25·S_contract + 0.15·S_ops + 0.05·S_family

    S_shape    = 0.80·F1(patterns) + 0.20·F1(nodes)                       multiset F1
    S_contract = 0.45·F1(returns) + 0.20·F1(result shape) + 0.15·F1(properties)
                 + 0.10·[distinct agrees] + 0.10·F1(order keys)
    S_ops      = F1(ops)                                                  multiset F1
    S_family   = 0.5·[match families agree] + 0.5·[return families agree]

A failed derivation (unparseable, unsafe, unsupported, empty) on either side scores 0.

For m gold and n predicted queries, ``S_align = Σ_{(i,j)∈M*} S_pair(i,j) / max(m, n, 1)`` over a
maximum-weight one-to-one matching M* (:func:`scipy.optimize.linear_sum_assignment`);
``S_aggregate`` is the same S_pair formula over the features **pooled** across each side's
queries (query boundaries erased: patterns, nodes, returns, result shape, ops and the families
as multisets, properties and order keys as unions, distinct if any query is); and
``S_evidence = 0.70·S_align + 0.30·S_aggregate``. An empty marked set on either side gives 0.

Choices where the method is silent (docs/rubric.md has them with a worked example):

* **multiset F1 of two empty bags is 1** (both queries agree that there is nothing — e.g. no
  relationship patterns in two node lookups); one empty, one not: 0. This is what makes
  identical queries score exactly 1.
* **returns** compare the canonical return expressions as a multiset (column order is a surface
  difference); **result shape** compares the per-column kinds (property, aggregate, boolean, …)
  as a multiset, so a different column count lowers it; **properties** are a set
  (the deriver reports them uniquely); **order** is the multiset F1 of ``(key, direction)``
  pairs (unordered vs unordered agrees).
* **family** gives half credit per family instead of all-or-nothing.
* LIMIT / SKIP values are not scored beyond the ``limit`` / ``skip`` operations (they are
  usually parameters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from scipy.optimize import linear_sum_assignment

from components.cypher.features import Derivation, DerivationError, derive
from components.graph.schema import GraphSchema

__all__ = [
    "CONTRACT_WEIGHTS",
    "PAIR_WEIGHTS",
    "SHAPE_WEIGHTS",
    "EvidenceScore",
    "multiset_f1",
    "pair_parts",
    "pool",
    "s_aggregate",
    "s_align",
    "s_evidence",
    "s_pair",
    "score_evidence",
]

PAIR_WEIGHTS: Final = {"shape": 0.55, "contract": 0.25, "ops": 0.15, "family": 0.05}
SHAPE_WEIGHTS: Final = {"patterns": 0.80, "nodes": 0.20}
CONTRACT_WEIGHTS: Final = {"returns": 0.45, "shape": 0.20, "properties": 0.15, "distinct": 0.10, "order": 0.10}
EVIDENCE_WEIGHTS: Final = {"align": 0.70, "aggregate": 0.30}

Derived = Derivation | DerivationError


def multiset_f1(gold: Iterable[Hashable], pred: Iterable[Hashable]) -> float:
    """F1 of two bags (repeats count). Two empty bags agree (1.0); one empty: 0.0.

    >>> multiset_f1(["a", "a", "b"], ["a", "b", "b"])
    0.6666666666666666
    >>> multiset_f1([], [])
    1.0
    """
    g, p = Counter(gold), Counter(pred)
    ng, np_ = sum(g.values()), sum(p.values())
    if ng == 0 and np_ == 0:
        return 1.0
    if ng == 0 or np_ == 0:
        return 0.0
    overlap = sum((g & p).values())
    return 2.0 * overlap / (ng + np_)


def pair_parts(gold: Derived, pred: Derived) -> dict[str, float]:
    """The four parts of S_pair (each in [0, 1]); all 0 when either derivation failed."""
    g, p = pool([gold]), pool([pred])
    if g is None or p is None:
        return {"shape": 0.0, "contract": 0.0, "ops": 0.0, "family": 0.0}
    return _parts(g, p)


def _parts(g: _Pooled, p: _Pooled) -> dict[str, float]:
    shape = SHAPE_WEIGHTS["patterns"] * multiset_f1(g.patterns, p.patterns) + SHAPE_WEIGHTS["nodes"] * multiset_f1(
        g.nodes, p.nodes
    )
    contract = (
        CONTRACT_WEIGHTS["returns"] * multiset_f1(g.returns, p.returns)
        + CONTRACT_WEIGHTS["shape"] * multiset_f1(g.shape, p.shape)
        + CONTRACT_WEIGHTS["properties"] * multiset_f1(g.properties, p.properties)
        + CONTRACT_WEIGHTS["distinct"] * float(g.distinct == p.distinct)
        + CONTRACT_WEIGHTS["order"] * multiset_f1(g.order, p.order)
    )
    # one query: the families agree or not (half credit each); pooled: multiset F1 of them
    family = 0.5 * multiset_f1([f[0] for f in g.families], [f[0] for f in p.families]) + 0.5 * multiset_f1(
        [f[1] for f in g.families], [f[1] for f in p.families]
    )
    return {"shape": shape, "contract": contract, "ops": multiset_f1(g.ops, p.ops), "family": family}


def _combine(parts: dict[str, float]) -> float:
    return min(1.0, max(0.0, sum(PAIR_WEIGHTS[k] * v for k, v in parts.items())))


def _as_derived(query: str | Derived, schema: GraphSchema | None) -> Derived:
    if isinstance(query, (Derivation, DerivationError)):
        return query
    if not isinstance(query, str):
        return DerivationError("not_text", f"expected a query string, got {type(query).__name__}")
    return derive(query, schema)


def s_pair(gold: str | Derived, pred: str | Derived, schema: GraphSchema | None = None) -> float:
    """S_pair of one gold and one predicted query (text or a derivation).

    >>> q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title"
    >>> s_pair(q, "MATCH (x:Paper)<-[:WROTE]-(y:Author) RETURN x.title AS t")
    1.0
    >>> s_pair(q, "not cypher")
    0.0
    """
    return _combine(pair_parts(_as_derived(gold, schema), _as_derived(pred, schema)))


def _matrix(gold: Sequence[Derived], pred: Sequence[Derived]) -> np.ndarray:
    m = np.zeros((len(gold), len(pred)))
    for i, g in enumerate(gold):
        for j, p in enumerate(pred):
            m[i, j] = _combine(pair_parts(g, p))
    return m


def s_align(gold: Sequence[str | Derived], pred: Sequence[str | Derived], schema: GraphSchema | None = None) -> float:
    """Maximum-weight one-to-one matching of S_pair, divided by max(m, n, 1).

    >>> q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title"
    >>> s_align([q], [q, "MATCH (v:Venue) RETURN v.name"])
    0.5
    """
    g = [_as_derived(q, schema) for q in gold]
    p = [_as_derived(q, schema) for q in pred]
    return _align(_matrix(g, p), len(g), len(p))


def _align(matrix: np.ndarray, m: int, n: int) -> float:
    if m == 0 or n == 0:
        return 0.0
    rows, cols = linear_sum_assignment(matrix, maximize=True)
    return float(matrix[rows, cols].sum()) / max(m, n, 1)


@dataclass(frozen=True)
class _Pooled:
    """The features of one query, or pooled across several: the bags as sorted tuples, the
    properties and order keys as unions, the ``(match, return)`` families as a multiset."""

    patterns: tuple
    nodes: tuple
    returns: tuple
    shape: tuple
    properties: tuple
    distinct: bool
    order: tuple
    ops: tuple
    families: tuple
    ok: bool = True


def pool(derivations: Sequence[Derived]) -> _Pooled | None:
    """Pool the successful derivations of one side; ``None`` when there is none."""
    good = [d for d in derivations if d.ok]
    if not good:
        return None

    def cat(name: str) -> tuple:
        return tuple(sorted((x for d in good for x in getattr(d, name)), key=repr))

    return _Pooled(
        patterns=cat("patterns"),
        nodes=cat("nodes"),
        returns=cat("returns"),
        shape=cat("shape"),
        properties=tuple(sorted({x for d in good for x in d.properties}, key=repr)),
        distinct=any(d.distinct for d in good),
        order=tuple(sorted({x for d in good for x in d.order}, key=repr)),
        ops=cat("ops"),
        families=tuple(sorted(((d.match_family, d.return_family) for d in good))),
    )


def _pooled_score(g: _Pooled | None, p: _Pooled | None) -> float:
    return 0.0 if g is None or p is None else _combine(_parts(g, p))


def s_aggregate(
    gold: Sequence[str | Derived], pred: Sequence[str | Derived], schema: GraphSchema | None = None
) -> float:
    """S_pair's formula over the features pooled across each side's queries (0 when a side has
    no successful derivation)."""
    return _pooled_score(pool([_as_derived(q, schema) for q in gold]), pool([_as_derived(q, schema) for q in pred]))


@dataclass(frozen=True)
class EvidenceScore:
    """S_evidence and its parts for one item; ``matrix`` is S_pair (gold rows × predicted
    columns); ``failed`` counts failed derivations per side."""

    s_align: float
    s_aggregate: float
    s_evidence: float
    matrix: tuple[tuple[float, ...], ...]
    failed: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        m = np.array(self.matrix) if self.matrix else np.zeros((0, 0))
        return {
            "s_align": self.s_align,
            "s_aggregate": self.s_aggregate,
            "s_evidence": self.s_evidence,
            "m": int(m.shape[0]),
            "n": int(m.shape[1]) if m.ndim == 2 else 0,
            "s_pair": {
                "matrix": [list(r) for r in self.matrix],
                "best_per_gold": [float(r.max()) for r in m] if m.size else [],
                "mean": float(m.mean()) if m.size else 0.0,
            },
            "failed_derivations": {"gold": self.failed[0], "pred": self.failed[1]},
        }


def score_evidence(
    gold: Sequence[str | Derived], pred: Sequence[str | Derived], schema: GraphSchema | None = None
) -> EvidenceScore:
    """Everything for one item: S_pair matrix, S_align, S_aggregate, S_evidence. An empty marked
    set on either side gives S_evidence = 0."""
    g = [_as_derived(q, schema) for q in gold]
    p = [_as_derived(q, schema) for q in pred]
    matrix = _matrix(g, p)
    align = _align(matrix, len(g), len(p))
    aggregate = _pooled_score(pool(g), pool(p)) if g and p else 0.0
    evidence = EVIDENCE_WEIGHTS["align"] * align + EVIDENCE_WEIGHTS["aggregate"] * aggregate if g and p else 0.0
    return EvidenceScore(
        align,
        aggregate,
        min(1.0, evidence),
        tuple(tuple(float(x) for x in r) for r in matrix),
        (sum(not d.ok for d in g), sum(not d.ok for d in p)),
    )


def s_evidence(
    gold: Sequence[str | Derived], pred: Sequence[str | Derived], schema: GraphSchema | None = None
) -> float:
    """``0.70·S_align + 0.30·S_aggregate``; 0 when either marked set is empty.

    >>> q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)"
    >>> s_evidence([q], [q]), s_evidence([q], [])
    (1.0, 0.0)
    """
    return score_evidence(gold, pred, schema).s_evidence
