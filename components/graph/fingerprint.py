"""Order-independent content fingerprint of a property graph.

Each node contributes a digest of ``(label, properties)``; each relationship a digest of
``(type, source label, source key, target label, target key, properties)``, where a key is the
endpoint's primary-key value. Digests are added modulo 2**128 (a multiset hash: insertion order
does not matter, duplicates count), then hashed together with the labels and types. Null
properties are ignored, so the same graph held by Ladybug (typed columns, nulls) and by Neo4j
(absent properties) gets the same fingerprint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from components.graph.values import normalize, row_digest

__all__ = [
    "FINGERPRINT_VERSION",
    "changed_parts",
    "combine_fingerprint",
    "graph_fingerprints",
    "node_digest",
    "rel_digest",
]

FINGERPRINT_VERSION = "gd-fp-1"
_MOD = 1 << 128


def _props(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {k: normalize(v) for k, v in properties.items() if v is not None}


def node_digest(label: str, properties: Mapping[str, Any]) -> int:
    return row_digest(("N", label, _props(properties)))


def rel_digest(
    rel_type: str,
    src_label: str,
    src_key: Any,
    dst_label: str,
    dst_key: Any,
    properties: Mapping[str, Any],
) -> int:
    return row_digest(("R", rel_type, src_label, normalize(src_key), dst_label, normalize(dst_key), _props(properties)))


def combine_fingerprint(node_digests: Iterable[int], rel_digests: Iterable[int]) -> str:
    """Combine per-element digests into a 32-hex-character fingerprint.

    >>> a = combine_fingerprint([node_digest("A", {"id": "1"})], [])
    >>> b = combine_fingerprint([node_digest("A", {"id": "1", "x": None})], [])
    >>> a == b
    True
    """
    return graph_fingerprints((("", d) for d in node_digests), (("", d) for d in rel_digests))[0]


def _hex(text: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(text.encode())
    return h.hexdigest()


def graph_fingerprints(
    nodes: Iterable[tuple[str, int]], rels: Iterable[tuple[str, int]], schema: Any = None
) -> tuple[str, dict[str, str]]:
    """The graph's fingerprint (as :func:`combine_fingerprint`) and, in the same pass, one
    fingerprint per part — ``node:<Label>`` and ``rel:<TYPE>`` — from ``(label, node digest)`` /
    ``(type, rel digest)`` pairs. With the :class:`~components.graph.schema.GraphSchema`, a part's
    schema entry (properties, endpoints) is part of its fingerprint. Two snapshots' part
    fingerprints say which labels and types changed (incremental re-certification)."""
    acc: dict[str, tuple[int, int]] = {}
    totals = {"node": (0, 0), "rel": (0, 0)}
    for kind, items in (("node", nodes), ("rel", rels)):
        for name, d in items:
            s, c = acc.get(f"{kind}:{name}", (0, 0))
            acc[f"{kind}:{name}"] = ((s + d) % _MOD, c + 1)
            s, c = totals[kind]
            totals[kind] = ((s + d) % _MOD, c + 1)
    (n_sum, n_count), (r_sum, r_count) = totals["node"], totals["rel"]
    graph = _hex(f"{FINGERPRINT_VERSION}|{n_count}|{n_sum:032x}|{r_count}|{r_sum:032x}")
    entries: dict[str, Any] = {}
    if schema is not None:
        entries = {f"node:{n.label}": [n.primary_key, sorted(n.properties.items())] for n in schema.node_labels}
        entries.update(
            {
                f"rel:{r.type}": [sorted(r.properties.items()), sorted((t.source, t.target) for t in r.triples)]
                for r in schema.rel_types
            }
        )
    parts = {}
    for key in sorted(set(acc) | set(entries)):
        s, c = acc.get(key, (0, 0))
        parts[key] = _hex(f"{FINGERPRINT_VERSION}|{key}|{entries.get(key)!r}|{c}|{s:032x}")
    return graph, parts


def changed_parts(old: Mapping[str, str], new: Mapping[str, str]) -> set[str]:
    """The parts (``node:<Label>`` / ``rel:<TYPE>``) added, removed or changed between two
    :func:`graph_fingerprints`."""
    return {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
