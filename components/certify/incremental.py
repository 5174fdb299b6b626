"""Incremental re-certification: when the graph changes, re-verify only the candidates whose
evidence could be affected and reuse the certificates of the rest.

A certificate (checks 1–4) depends on the candidate and on the parts of the graph its queries
can see: the schema entries and the content of the node labels and relationship types those
queries name. :func:`query_reads` lists those parts for one query — ``node:<Label>`` and
``rel:<TYPE>``, or ``*`` (everything) when a node pattern has no plain label, a relationship no
type, or the query does not parse; a candidate's *reads* are those of its evidence queries plus
every query its supporting program ran beyond them (:attr:`Certificate.forwarded`).
:func:`~components.graph.fingerprint.graph_fingerprints` of the old and the new snapshot say which
parts changed. A candidate is *affected* when a changed part is among its reads (``*`` meets
every change); unaffected candidates keep their certificate — checks 1–4 would read exactly the
same schema entries and rows — and affected ones are certified again against the new graph.
Everything graph-wide (the judge, the leakage lexicon, the evidence features, the certifier's
fault-injection accuracy) is recomputed for all of them, so the result equals a full
re-certification (tested).

The earlier rows are those of the ``certified_dataset`` layer's previous artifact (its latest
materialization), which records the part fingerprints of the snapshot it was certified on.
Candidates are matched to earlier rows by :func:`candidate_key`: their content (question,
answer, program, evidence, trace …) without timings and without the snapshot they claim. A
certificate made under other certification rules (:data:`~components.certify.certifier.RULES_VERSION`)
is never reused.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from cypherast import ast as a

from components.certify.certifier import RULES_VERSION
from components.cypher.parse import iter_nodes, parse_query
from components.graph.errors import GraphError
from components.graph.fingerprint import changed_parts
from components.store.artifact import Artifact

__all__ = [
    "ALL",
    "CERT_COLUMNS",
    "affected",
    "candidate_key",
    "candidate_reads",
    "previous_certificates",
    "query_reads",
    "reusable_certificates",
]

log = logging.getLogger(__name__)

ALL: Final = "*"
#: timings, wherever they occur (the trace's per-call ``elapsed_ms`` included)
_VOLATILE: Final = frozenset({"latency_s", "prompt_tokens", "completion_tokens", "elapsed_ms", "elapsed_s"})


def query_reads(query: str) -> frozenset[str]:
    """The graph parts ``query`` can read (see the module docstring).

    >>> sorted(query_reads("MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN p.title"))
    ['node:Author', 'node:Paper', 'rel:WROTE']
    >>> sorted(query_reads("MATCH (a:Author)-[:WROTE]->(p) RETURN p"))
    ['*']
    >>> sorted(query_reads("MATCH (a:Author) WHERE EXISTS { (a)-[:CITES]->(:Paper) } RETURN a"))
    ['node:Author', 'node:Paper', 'rel:CITES']
    """
    try:
        tree = parse_query(query).tree
    except GraphError as exc:  # an unreadable query can read anything
        log.debug("query reads everything: it does not parse (%s): %r", exc, query)
        return frozenset({ALL})
    reads: set[str] = set()
    nodes = [n for n in iter_nodes(tree) if isinstance(n, a.NodePattern)]
    # a variable labelled elsewhere names the same node — unless scopes can rebind it
    rebinds = any(isinstance(n, (a.Union, a.CallSubquery)) for n in iter_nodes(tree))
    labelled = set() if rebinds else {str(n.variable) for n in nodes if n.variable is not None and _plain_labels(n)}
    for node in nodes:
        names = _plain_labels(node)
        if not names and (node.variable is None or str(node.variable) not in labelled):
            return frozenset({ALL})  # a node of any label (a variable labelled elsewhere is fine)
        reads.update(f"node:{name}" for name in names)
    for node in iter_nodes(tree):
        if isinstance(node, a.RelationshipPattern):
            if not node.types:
                return frozenset({ALL})
            reads.update(f"rel:{t}" for t in node.types)
    return frozenset(reads)


def _plain_labels(node: a.NodePattern) -> list[str]:
    labels = node.labels
    if labels is None or labels.expression is not None:
        return []
    return [str(name) for name in labels.labels or ()]


def candidate_reads(evidence: Any, forwarded: Iterable[str] = ()) -> frozenset[str]:
    """Everything a candidate's certificate read: its evidence queries and the program's other
    queries (malformed evidence: everything)."""
    if not isinstance(evidence, (list, tuple)):
        return frozenset({ALL})
    queries = [e.get("query") if isinstance(e, Mapping) else None for e in evidence]
    if not all(isinstance(q, str) for q in queries):
        return frozenset({ALL})
    reads: set[str] = set()
    for query in queries + list(forwarded):
        reads |= query_reads(query)
        if ALL in reads:
            return frozenset({ALL})
    return frozenset(reads)


def affected(reads: Iterable[str], changed: set[str]) -> bool:
    """Whether a change of the parts ``changed`` can change a certificate that read ``reads``."""
    reads = set(reads)
    return bool(changed) and (ALL in reads or bool(reads & changed))


def candidate_key(record: Mapping[str, Any]) -> str:
    """Content key of a candidate record (``QACandidate.to_record()`` or a certified row's
    candidate columns): everything but timings and the claimed snapshot. The certifier reads
    neither (check 3 compares the claimed snapshot with the graph it runs on)."""
    content = {}
    for k, v in record.items():
        if k in _VOLATILE:
            continue
        if k.endswith("_json") and isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                pass
        content[k] = _without_timings(v)
    meta = content.get("meta_json")
    if isinstance(meta, dict):
        meta.pop("snapshot_fingerprint", None)
    return hashlib.blake2b(json.dumps(content, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def _without_timings(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_timings(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_without_timings(v) for v in value]
    return value


#: The columns a certified row adds to its candidate's record (``dataset._row``).
CERT_COLUMNS: Final = frozenset(
    {
        "status",
        "reasons",
        "certificate_json",
        "verdict",
        "judge_json",
        "leaked",
        "leakage_json",
        "evidence_features_json",
        "reads_json",
        "admitted",
    }
)


def reusable_certificates(
    previous_rows: Sequence[Mapping[str, Any]], changed: set[str]
) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """``candidate_key → (certificate json, reads)`` for every earlier certified row whose
    certificate still holds after the parts ``changed`` changed."""
    out: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for row in previous_rows:
        raw_reads = row.get("reads_json")
        if not raw_reads:
            continue  # a row from before reads were recorded: certify it again
        reads = json.loads(raw_reads)
        if affected(reads, changed):
            continue
        cert = json.loads(row["certificate_json"])
        if cert.get("rules") != RULES_VERSION:
            continue  # made under other certification rules: certify it again
        record = {k: v for k, v in row.items() if k not in CERT_COLUMNS}
        out[candidate_key(record)] = (cert, reads)
    return out


def previous_certificates(
    previous: Artifact | None, params: Mapping[str, Any], parts: Mapping[str, str] | None
) -> tuple[dict[str, tuple[dict[str, Any], list[str]]], str | None]:
    """The reusable certificates (:func:`reusable_certificates`) of ``previous`` — the
    ``certified_dataset`` layer's previous artifact, or ``None`` — for a graph whose part
    fingerprints are ``parts``, and that artifact's
    fingerprint. ``({}, None)`` when there is nothing to build on: no previous artifact, another
    certify config, or a snapshot without part fingerprints (then or now)."""
    from components.store.fingerprint import read_parquet

    if previous is None or not previous.path or not Path(previous.path).is_file() or not parts:
        return {}, None
    old = previous.summary.get("snapshot_parts")
    if dict(previous.config) != dict(params) or not old:
        return {}, None
    return reusable_certificates(read_parquet(previous.path), changed_parts(old, parts)), previous.fingerprint
