"""Difficulty levels of certified items, estimated from their evidence structure.

A certified item has no Graph-CoT trajectory, only its Cypher evidence. Its level is that of
the exploration the evidence describes: one round per relationship hop of the evidence
patterns (a variable-length hop counts its minimum length; at least one round), walked from the
start node's label; a hop's ``|U_t|`` is the **average fan-out** of that relationship in the
traversed direction, from the snapshot's schema counts (``triple count / count of the label it
leaves from``, rounded; a hop not connected to the walk is taken forward). So
``Author -WROTE-> Paper`` (≈ 3 papers per author) is an E-round, ``Paper -PUBLISHED_IN-> Venue``
an S-round, and its reverse an E-round. Then :func:`~components.curriculum.sampler.level_of`.
This is an estimate of the exploration a solver needs, not a measurement of one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.curriculum.sampler import level_of
from components.graph.schema import GraphSchema

__all__ = ["estimate_rounds", "estimate_level"]


def _fanout(schema: GraphSchema, source: str, rel: str, target: str, forward: bool) -> float:
    rt = schema.types.get(rel)
    if rt is None:
        return 1.0
    triples = [t for t in rt.triples if (source in ("*", t.source)) and (target in ("*", t.target))]
    count = sum(t.count for t in triples)
    side = source if forward else target
    labels = {t.source if forward else t.target for t in triples} if side == "*" else {side}
    base = sum(schema.labels[lbl].count for lbl in labels if lbl in schema.labels)
    return count / base if base else 1.0


def estimate_rounds(features: Sequence[Mapping[str, Any]], schema: GraphSchema, start_label: str | None) -> list[int]:
    """``|U_t|`` estimates per round (see the module docstring); failed derivations add nothing."""
    frontier = start_label
    out: list[int] = []
    for feat in features:
        if not feat.get("ok"):
            continue
        for source, rel, target, min_hops, _max_hops, _directed in feat.get("patterns") or []:
            forward = frontier != target or frontier == source
            fan = _fanout(schema, source, rel.split("|")[0], target, forward)
            out += [max(0, round(fan))] * max(1, int(min_hops or 1))
            frontier = target if forward else source
    return out or [1]


def estimate_level(features: Sequence[Mapping[str, Any]], schema: GraphSchema, start_label: str | None) -> str:
    return level_of(estimate_rounds(features, schema, start_label))
