"""The external-style certification set: ``questions.yaml`` on ``graph.cypher`` turned into
candidates (each question answered by a final program in two or three styles, run for real in
the sandbox) and into fault variants (each made by running a *modified* final program, so its
trace is genuine). Used by ``tests/components/certify/test_external_set.py`` and
``benchmarks/certify_external.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
GRAPH = HERE / "graph.cypher"
QUESTIONS = HERE / "questions.yaml"
STYLES = ("index", "records", "lookup")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer_type: str
    cypher: str
    params: dict[str, Any]
    read: str
    col: str | None
    prop: str | None
    expect: str
    lookup: dict[str, str] | None

    @property
    def expected_status(self) -> str:
        return self.expect.split(":")[0]


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    out = []
    for raw in yaml.safe_load(path.read_text(encoding="utf-8")):
        out.append(
            Question(
                raw["id"],
                raw["q"],
                raw["type"],
                raw["cypher"],
                dict(raw.get("params") or {}),
                raw["read"],
                raw.get("col"),
                raw.get("prop"),
                raw.get("expect", "strict"),
                raw.get("lookup"),
            )
        )
    return out


def _j(q: Question, columns: list[str]) -> int:
    return columns.index(q.col) if q.col else 0


def _answer_code(q: Question, style: str, columns: list[str], result: str = "r") -> str:
    """Python computing ``answer`` from the result ``result`` in ``style`` (index / records)."""
    j = _j(q, columns)
    name = columns[j]
    prop = f"[{q.prop!r}]" if q.prop else ""
    get = f".get({q.prop!r})" if q.prop else ""
    if style == "index":
        return {
            "cell": f"answer = {result}.rows[0][{j}]{prop}",
            "column": f"answer = sorted({{v for v in ({'row[%d]%s' % (j, get)} for row in {result}.rows) "
            "if v is not None}, key=str)",
            "count": f"answer = len({result}.rows)",
            "exists": f"answer = len({result}.rows) > 0",
            "collect": (f"answer = sorted({{item{get} for item in {result}.rows[0][{j}]}}, key=str)"),
        }[q.read]
    return {
        "cell": f"rec = {result}.records()[0]\nanswer = rec[{name!r}]{prop}",
        "column": (
            f"found = set()\nfor rec in {result}.records():\n    value = rec[{name!r}]{get}\n"
            f"    if value is not None:\n        found.add(value)\nanswer = sorted(found, key=str)"
        ),
        "count": f"answer = len({result}.records())",
        "exists": f"answer = bool({result}.records())",
        "collect": f"rec = {result}.records()[0]\nanswer = sorted(set(item{get} for item in rec[{name!r}]), key=str)",
    }[q.read]


def program(q: Question, style: str, columns: list[str], *, answer: str | None = None, query: str | None = None) -> str:
    """The final program of ``q`` in ``style``; ``answer`` replaces the computation by a Python
    expression (fault variants), ``query`` the query text."""
    head = f"import json\nr = cypher({(query or q.cypher)!r}, **{q.params!r})\n"
    if style == "lookup":
        first, second = q.lookup["first"], q.lookup["second"]  # type: ignore[index]
        head = (
            f"import json\nr1 = cypher({first!r}, **{q.params!r})\nids = [row[0] for row in r1.rows]\n"
            f"r = cypher({second!r}, ids=ids)\n"
        )
        code = {"cell": "answer = r.rows[0][0]", "column": "answer = sorted({row[0] for row in r.rows}, key=str)"}[
            q.read
        ]
        return head + code + "\nmark_evidence(r1, r)\nprint(json.dumps(answer))\n"
    code = f"answer = {answer}" if answer is not None else _answer_code(q, style, columns)
    return head + code + "\nmark_evidence(r)\nprint(json.dumps(answer))\n"


def styles(q: Question) -> list[str]:
    return ["index", "records"] + (["lookup"] if q.lookup else [])


def expected(q: Question, style: str) -> str:
    return "partial:multi_query_composition" if style == "lookup" else q.expect


@dataclass
class Case:
    """One candidate (valid or a fault variant) with the outcome the certifier must give."""

    question: Question
    style: str
    kind: str  # "valid" or a fault kind
    expect: str  # strict | partial:<reason> | hard_failure:<reason>
    candidate: Any


def _columns(qp: Any, q: Question) -> list[str]:
    return list(qp.run(q.cypher, q.params, limit=1).columns)


def valid_cases(qp: Any, schema: Any, server: Any = None) -> list[Case]:
    from components.quizzer.external import candidate_from_program

    out = []
    for q in load_questions():
        cols = _columns(qp, q)
        for style in styles(q):
            cand = candidate_from_program(
                qp,
                schema,
                f"{q.id}-{style}",
                q.question,
                q.answer_type,
                program(q, style, cols),
                server=server,
                meta={"question": q.id},
            )
            out.append(Case(q, style, "valid", expected(q, style), cand))
    return out


def _literal(value: Any) -> str:
    return repr(json.loads(json.dumps(value)))


def _wrong(value: Any, answer_type: str) -> Any:
    return {
        "boolean": lambda v: not v,
        "number": lambda v: v + 7,
        "set": lambda v: sorted(v[:-1] + ["Nowhere, Nothing"], key=str) if len(v) > 1 else ["Nowhere, Nothing"],
        "entity": lambda v: "Nowhere, Nothing",
    }[answer_type](value)


def fault_cases(qp: Any, schema: Any, valid: list[Case], server: Any = None) -> list[Case]:
    """Fault variants of the strict index-style candidates, each made by running a modified final
    program in the sandbox:

    * ``literal_right`` / ``literal_wrong`` — the queries run and are marked, the printed answer is
      a literal (right, or wrong and stated) → hard ``hard_coded_answer``;
    * ``broad_listing`` — entity / set answers: the evidence lists every value of the answer's
      column over the whole label, Python keeps the stated ones → partial
      ``selected_from_broader_evidence``;
    * ``broad_count`` — number answers: a listing of (name, value) rows over the label, Python picks
      the stated value's row by comparison → partial ``selected_from_broader_evidence``;
    * ``added_limit`` — set answers of ≥ 2 rows: ``LIMIT n - 1`` without ORDER BY, the subset
      becomes the stated answer → partial ``arbitrary_subset``;
    * ``node_internal_key`` — answers read from whole nodes: the node's ``_label`` becomes the
      answer → hard ``incomplete_evidence``;
    * ``comma_split`` — a comma-bearing one-member set whose stated value is split at the comma →
      hard ``answer_evidence_mismatch``.
    """
    from components.quizzer.candidate import format_answer
    from components.quizzer.external import candidate_from_program

    out: list[Case] = []

    def add(case_q: Question, kind: str, expect: str, prog: str, *, restate: Any = None) -> None:
        cand = candidate_from_program(
            qp,
            schema,
            f"{case_q.id}-{kind}",
            case_q.question,
            case_q.answer_type,
            prog,
            server=server,
            meta={"question": case_q.id, "fault": kind},
        )
        if not cand.ok:
            return
        if restate is not None:
            cand.answer_value, cand.answer = restate, format_answer(restate)
        out.append(Case(case_q, "index", kind, expect, cand))

    for case in valid:
        q, cand = case.question, case.candidate
        if case.style != "index" or case.expect != "strict" or not cand.ok:
            continue
        cols = list(cand.evidence[0]["columns"])
        add(
            q,
            "literal_right",
            "hard_failure:hard_coded_answer",
            program(q, "index", cols, answer=_literal(cand.answer_value)),
        )
        wrong = _wrong(cand.answer_value, q.answer_type)
        add(q, "literal_wrong", "hard_failure:hard_coded_answer", program(q, "index", cols, answer=_literal(wrong)))
        if (
            q.answer_type == "set"
            and q.read == "column"
            and len(cand.evidence[0]["rows"]) >= 2
            and "LIMIT" not in q.cypher
        ):
            n = len(cand.evidence[0]["rows"])
            add(
                q,
                "added_limit",
                "partial:arbitrary_subset",
                program(q, "index", cols, query=f"{q.cypher} LIMIT {n - 1}"),
            )
        if q.prop and q.read in ("cell", "column"):
            j = _j(q, cols)
            get = (
                f"r.rows[0][{j}]['_label']" if q.read == "cell" else f"sorted({{row[{j}]['_label'] for row in r.rows}})"
            )
            kind_type = "entity" if q.read == "cell" else "set"
            if q.answer_type == kind_type:
                add(q, "node_internal_key", "hard_failure:incomplete_evidence", program(q, "index", cols, answer=get))
        if q.answer_type == "set" and len(cand.answer_value) == 1 and "," in str(cand.answer_value[0]):
            member = str(cand.answer_value[0])
            split = sorted(p.strip() for p in member.split(","))
            add(q, "comma_split", "hard_failure:answer_evidence_mismatch", program(q, "index", cols), restate=split)
    _broad_cases(valid, add)
    return out


# Hand-written over-broad evidence: the question's own query answers it directly; these answer
# it from a listing that merely contains the answer, selecting in Python.
BROAD = {
    "n01": (
        "MATCH (r:Restaurant) RETURN r.id AS id, r.name AS name",
        "[row[1] for row in r.rows if row[0] == 'rest-05'][0]",
    ),
    "n09": (
        "MATCH (c:Chef) RETURN c.name AS name, c.nationality AS nationality",
        "[row[1] for row in r.rows if row[0] == 'Emi Fujita'][0]",
    ),
    "a01": (
        "MATCH (r:Restaurant)-[:LOCATED_IN]->(c:City) RETURN c.name AS city, count(r) AS n",
        "[row[1] for row in r.rows if row[0] == 'Naples'][0]",
    ),
    "e03": (
        "MATCH (v:Review)-[:ABOUT]->(r:Restaurant) RETURN r.name AS name, count(v) AS reviews",
        "[row[1] for row in r.rows if row[0] == 'Il Fuego'][0]",
    ),
    "n03": (
        "MATCH (r:Restaurant)-[:LOCATED_IN]->(c:City) RETURN c.name AS city, r.name AS name",
        "sorted({row[1] for row in r.rows if row[0] == 'Lyon'})",
    ),
    "w01": (
        "MATCH (r:Restaurant)-[:LOCATED_IN]->(c:City) RETURN c.name AS city, count(r) AS n",
        "sorted(row[0] for row in r.rows if row[1] > 10)",
    ),
    "r02": ("MATCH (c:Chef) RETURN c.name AS name, c.born AS born", "min(r.rows, key=lambda row: row[1])[0]"),
    "a04": ("MATCH (r:Restaurant) RETURN r.name AS name, r.opened AS opened", "min(row[1] for row in r.rows)"),
    "c06": (
        "MATCH (r:Restaurant) RETURN r.opened AS year, r.name AS title",
        "sorted(row[1] for row in r.rows if row[0] == 2017)",
    ),
    "d04": (
        "MATCH (r:Restaurant)-[:LOCATED_IN]->(c:City) RETURN c.name AS city, r.price AS price",
        "sorted({row[1] for row in r.rows if row[0] == 'Kyoto'})",
    ),
}


def _broad_cases(valid: list[Case], add: Any) -> None:
    for case in valid:
        q = case.question
        if case.style != "index" or q.id not in BROAD or not case.candidate.ok:
            continue
        query, expr = BROAD[q.id]
        prog = f"import json\nr = cypher({query!r})\nanswer = {expr}\nmark_evidence(r)\nprint(json.dumps(answer))\n"
        add(
            q,
            "broad_count" if q.answer_type == "number" else "broad_listing",
            "partial:selected_from_broader_evidence",
            prog,
        )


def matches(expect: str, cert: Any) -> bool:
    """Whether a certificate is the outcome ``expect`` names (``strict``, ``partial:<reason>`` —
    the reason among its reasons — or ``hard_failure:<reason>``, its only reason)."""
    status, _, reason = expect.partition(":")
    if status != cert.status:
        return False
    return not reason or (reason in cert.reasons if status == "partial" else cert.reasons == [reason])


def certify_cases(qp: Any, schema: Any, fingerprint: str, server: Any = None) -> tuple[list[Case], list[Case], list]:
    """Every valid case and fault variant, certified: ``(valid, faults, [(case, certificate)])``
    (cases whose program did not run are left out of the last list)."""
    from components.certify import certify_many

    valid = valid_cases(qp, schema, server)
    faults = fault_cases(qp, schema, valid, server)
    cases = [c for c in valid + faults if c.candidate.ok]
    for c in cases:
        c.candidate.meta["snapshot_fingerprint"] = fingerprint
    certs = certify_many([c.candidate for c in cases], schema=schema, query_path=qp, current_fingerprint=fingerprint)
    return valid, faults, list(zip(cases, certs, strict=True))


def fault_table(results: list) -> list[dict[str, Any]]:
    """Per fault kind: expected outcome, injected, how many got it, how many were strict."""
    by_kind: dict[str, list] = {}
    for c, cert in results:
        if c.kind != "valid":
            by_kind.setdefault(c.kind, []).append((c, cert))
    return [
        {
            "kind": kind,
            "expect": items[0][0].expect,
            "injected": len(items),
            "caught": sum(matches(c.expect, cert) for c, cert in items),
            "strict": sum(cert.status == "strict" for _, cert in items),
            "misses": [(c.question.id, cert.status, cert.reasons) for c, cert in items if not matches(c.expect, cert)],
        }
        for kind, items in sorted(by_kind.items())
    ]
