"""Out-of-distribution (OOD) evaluation questions: recommendation-style questions that no graph
lookup answers, each with a reference answer derived from the graph by a stated rule.

GraphDancer evaluates such questions only — never trains on them — and scores them against a
reference. Here they are generated per domain from any schema, over a **co-occurrence triple**
``(A)-[:R]->(B)`` (or ``(B)-[:R]->(A)``) where an ``A`` node links to several ``B`` nodes and a
``B`` node is shared by several ``A`` nodes (authors and their papers, customers and products):

* ``recommend_similar`` — *"Which authors would you suggest to someone who follows the author
  "X"?"*; reference rule: the 3 other ``A`` nodes sharing the most ``B`` neighbours with X
  (ties by name);
* ``recommend_next`` — *"Which papers might interest the author "X" next?"*; reference rule: the
  3 ``B`` nodes X is not linked to that are linked most often to the ``A`` nodes sharing a ``B``
  with X (collaborative filtering; ties by name).

Every reference comes from one parameterised query through the read-only query path; a node
whose rule yields fewer than 2 names, or a tie at the cut (the 3rd and 4th equally often), is
skipped. Rows carry ``ood: True``, ``qtype``
``ood:<kind>``, the ``rule`` text and the reference as the answer (a set of names, scored by
ROUGE-L and the judge, reported apart from the main table — a reference is one reasonable
answer, not the only one).
"""

from __future__ import annotations

import random
from typing import Any, Final

from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.schema import GraphSchema, Triple, quote_identifier
from components.quizzer.context import plural
from components.tools.retriever import choose_text_properties

__all__ = ["OOD_KINDS", "cooccurrence_triples", "ood_questions"]

OOD_KINDS: Final = ("recommend_similar", "recommend_next")
TOP: Final = 3

_RULES: Final = {
    "recommend_similar": "the {top} other {a} sharing the most {b} with it (ties by name)",
    "recommend_next": "the {top} {b} it is not linked to that are linked most often to the {a} sharing "
    "a {b_one} with it (ties by name)",
}


def cooccurrence_triples(schema: GraphSchema) -> list[tuple[str, Triple]]:
    """``(anchor label A, triple)`` pairs whose ``A`` side fans out (> 1.2 ``B`` per ``A``) and
    whose ``B`` side is shared (> 1.2 ``A`` per ``B``), both with a name-like property; most
    relationships first."""
    names = choose_text_properties(schema)
    out = []
    for rt in schema.types.values():
        for t in rt.triples:
            if t.source == t.target or not t.count:
                continue
            for a, b in ((t.source, t.target), (t.target, t.source)):
                na, nb = schema.labels[a].count, schema.labels[b].count
                if names.get(a) and names.get(b) and na and nb and t.count / na > 1.2 and t.count / nb > 1.2:
                    out.append((a, t))
    return sorted(out, key=lambda p: (-p[1].count, p[0], p[1].type))


def _queries(schema: GraphSchema, anchor: str, t: Triple) -> dict[str, str]:
    """The two reference queries over ``anchor`` (A) and the triple's other label (B)."""
    other = t.target if t.source == anchor else t.source
    names = choose_text_properties(schema)
    la, lb = quote_identifier(anchor), quote_identifier(other)
    pk = quote_identifier(schema.labels[anchor].primary_key)
    na, nb = quote_identifier(names[anchor][0]), quote_identifier(names[other][0])
    rel = f"[:{quote_identifier(t.type)}]"
    a_to_b, b_to_a = (f"-{rel}->", f"<-{rel}-") if t.source == anchor else (f"<-{rel}-", f"-{rel}->")
    shared = f"MATCH (x:{la} {{{pk}: $id}}){a_to_b}(b:{lb}){b_to_a}(y:{la})"
    return {
        "recommend_similar": (
            f"{shared} WHERE y.{pk} <> $id "
            f"RETURN y.{na} AS name, count(DISTINCT b) AS score ORDER BY score DESC, name LIMIT {TOP + 1}"
        ),
        "recommend_next": (
            f"{shared}{a_to_b}(c:{lb}) WHERE y.{pk} <> $id AND NOT EXISTS {{ MATCH (x){a_to_b}(c) }} "
            f"RETURN c.{nb} AS name, count(*) AS score ORDER BY score DESC, name LIMIT {TOP + 1}"
        ),
    }


def _question(kind: str, anchor: str, other: str, name: str) -> str:
    a, b = anchor.lower(), other.lower()
    if kind == "recommend_similar":
        return f'Which {plural(a)} would you suggest to someone who likes the {a} "{name}"?'
    return f'Which {plural(b)} might interest the {a} "{name}" next?'


def ood_questions(query_path: ReadOnlyQueryPath, schema: GraphSchema, n: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``n`` OOD rows (module docstring): the (triple, kind) combinations in turn —
    ``recommend_next`` only from the relationship's source side (the actor: an author, a
    customer) — each over its own seeded sample of anchor nodes. Empty when the graph has no
    co-occurrence triple."""
    combos = [
        (anchor, t, kind)
        for anchor, t in cooccurrence_triples(schema)
        for kind in OOD_KINDS
        if kind == "recommend_similar" or anchor == t.source
    ]
    if n <= 0 or not combos:
        return []
    queries = [_queries(schema, anchor, t)[kind] for anchor, t, kind in combos]  # one text per combination
    rng = random.Random(seed)
    names = choose_text_properties(schema)
    pools: dict[str, list[Any]] = {}
    for anchor, _t, _kind in combos:
        if anchor not in pools:
            pk = quote_identifier(schema.labels[anchor].primary_key)
            name = quote_identifier(names[anchor][0])
            query = f"MATCH (x:{quote_identifier(anchor)}) RETURN x.{pk} AS id, x.{name} AS name ORDER BY id"
            rows = list(query_path.run(query, {}, limit=5000).rows)
            pools[anchor] = rng.sample(rows, len(rows))
    cursor = [0] * len(combos)
    out: list[dict[str, Any]] = []
    for attempt in range(20 * n):
        if len(out) >= n:
            break
        c = attempt % len(combos)
        anchor, t, kind = combos[c]
        pool = pools[anchor]
        if cursor[c] >= len(pool):
            continue
        node_id, node_name = pool[cursor[c]]
        cursor[c] += 1
        rows = query_path.run(queries[c], {"id": node_id}, limit=TOP + 1).rows
        ref = [str(r[0]) for r in rows[:TOP] if r[0] is not None]
        if node_name is None or len(ref) < 2 or (len(rows) > TOP and rows[TOP][1] == rows[TOP - 1][1]):
            continue  # too few, or a tie at the cut would make the reference arbitrary
        other = t.target if t.source == anchor else t.source
        rule = _RULES[kind].format(top=TOP, a=plural(anchor.lower()), b=plural(other.lower()), b_one=other.lower())
        out.append(
            {
                "id": f"ood-{kind}-{len(out):04d}",
                "question": _question(kind, anchor, other, str(node_name)),
                "answer": "; ".join(sorted(ref)),
                "answer_type": "set",
                "level": None,
                "qtype": f"ood:{kind}",
                "ood": True,
                "rule": f"{rule}; via {t.source} -[{t.type}]-> {t.target}",
            }
        )
    return out
