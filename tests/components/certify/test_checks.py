"""Each program check on its own, on real template candidates edited one field at a time."""

from __future__ import annotations

import copy

from components.certify.checks import (
    check_format_provenance_safety,
    check_grounding,
    check_reexecution,
    check_schema_static,
)
from components.tools.traced import query_orders, result_hash


def _base(env, domain="academic", answer_type=None):
    for c in env[domain]["candidates"]:
        if c.ok and (answer_type is None or c.answer_type == answer_type):
            return copy.deepcopy(c)
    raise AssertionError("no candidate")


def _with_query(cand, query: str):
    """The candidate's first evidence item with ``query`` (hash kept consistent), trace removed
    so only the edited property is tested."""
    item = dict(cand.evidence[0], query=query, ordered=query_orders(query) if "MATCH" in query else False)
    item["result_hash"] = result_hash(item["columns"], item["rows"], item["ordered"])
    cand.evidence = [item]
    cand.trace = []
    return cand


def test_all_checks_pass_on_an_untouched_candidate(certify_env) -> None:
    env = certify_env["academic"]
    c = _base(certify_env)
    assert check_format_provenance_safety(c).passed
    assert check_schema_static(c, env["schema"]).passed
    assert check_reexecution(c, env["qp"], env["fingerprint"], env["fingerprint"]).passed
    assert check_grounding(c, env["qp"], env["schema"]).verdict in ("pass", "undetermined")


def test_format_errors_and_unsafe_queries(certify_env) -> None:
    c = _base(certify_env)
    c.final_program = ""
    assert check_format_provenance_safety(c).reason == "format_error"
    c = _base(certify_env)
    del c.evidence[0]["result_hash"]
    assert check_format_provenance_safety(c).reason == "format_error"
    c = _base(certify_env)
    c.evidence[0]["rows"] = [[1, 2, 3, 4, 5, 6, 7]]
    assert check_format_provenance_safety(c).reason == "format_error"
    for unsafe in (
        "MATCH (n) DETACH DELETE n",
        "CALL db.labels() YIELD label RETURN label",
        "MATCH (n) RETURN apoc.text.join(['a'], ',')",
        "LOAD CSV FROM 'file:///x' AS r RETURN r",
    ):
        result = check_format_provenance_safety(_with_query(_base(certify_env), unsafe))
        assert (result.verdict, result.reason) == ("fail", "unsafe_query"), unsafe


def test_duplicate_ids_and_unmarked_evidence_are_forged(certify_env) -> None:
    c = _base(certify_env)
    c.evidence = c.evidence + [dict(c.evidence[0])]
    assert check_format_provenance_safety(c).reason == "forged_evidence"
    c = _base(certify_env)
    c.trace[-1]["evidence"] = []
    assert check_format_provenance_safety(c).reason == "forged_evidence"
    c = _base(certify_env)
    c.final_program += "\n# edited\n"
    assert check_format_provenance_safety(c).reason == "forged_evidence"


def test_schema_direction_and_dialect(certify_env) -> None:
    schema = certify_env["academic"]["schema"]
    s, t, d = min(t for t in schema.triples() if t[0] != t[2])
    cases = {
        "MATCH (n:NoSuchLabel) RETURN n.name AS answer": "schema_error",
        f"MATCH (a:`{d}`)-[:`{t}`]->(b:`{s}`) RETURN count(b) AS answer": "direction_error",
        f"MATCH (a:`{s}`)-[:`{t}`]->(b:`{s}`) RETURN count(b) AS answer": "schema_error",
        f"MATCH (a:`{s}`)-[*bfs]->(b) RETURN count(b) AS answer": "dialect_divergence",
    }
    for query, reason in cases.items():
        result = check_schema_static(_with_query(_base(certify_env), query), schema)
        assert (result.verdict, result.reason) == ("fail", reason), (query, result)
    ok = f"MATCH (a:`{s}`)-[:`{t}`]->(b:`{d}`) RETURN count(b) AS answer"
    assert check_schema_static(_with_query(_base(certify_env), ok), schema).passed


def test_truncated_evidence_under_a_set_claim_is_static_misuse(certify_env) -> None:
    c = _base(certify_env, answer_type="set")
    c.evidence[0]["truncated"] = True
    result = check_schema_static(c, certify_env["academic"]["schema"])
    assert (result.verdict, result.reason) == ("fail", "truncation_misuse")


def test_reexecution_drift_errors_and_mismatch(certify_env) -> None:
    env = certify_env["academic"]
    c = _base(certify_env)
    assert check_reexecution(c, env["qp"], env["fingerprint"], certify_env["drift"]).reason == "snapshot_drift"
    assert check_reexecution(c, env["qp"], None, env["fingerprint"]).reason == "snapshot_drift"
    bad = copy.deepcopy(c)
    bad.evidence[0]["params"] = {}
    assert check_reexecution(bad, env["qp"], env["fingerprint"], env["fingerprint"]).reason == "execution_failure"
    bad = copy.deepcopy(c)
    bad.evidence[0]["truncated"] = not bad.evidence[0]["truncated"]
    assert check_reexecution(bad, env["qp"], env["fingerprint"], env["fingerprint"]).reason == "result_mismatch"


def test_grounding_mismatch_and_undetermined(certify_env) -> None:
    env = certify_env["academic"]
    c = _base(certify_env, answer_type="number")
    c.answer_value += 1
    c.answer = str(c.answer_value)
    result = check_grounding(c, env["qp"], env["schema"])
    assert (result.verdict, result.reason) == ("fail", "answer_evidence_mismatch")
    c = _base(certify_env)
    c.answer = "something else entirely"
    assert check_grounding(c, env["qp"], env["schema"]).reason == "answer_evidence_mismatch"
