"""The static data flow of final programs: literal answers, moved values, selections."""

from __future__ import annotations

import pytest

from components.certify.dataflow import answer_flow

Q = "import json\nr = cypher('MATCH (n:Person) RETURN n.name AS name, n.age AS age')\nmark_evidence(r)\n"

# (program tail, answer type, verdict, computed by Python?)
CASES = {
    "cell": ("print(r.rows[0][0])", "entity", "dependent", False),
    "cell_guarded": (
        "answer = r.rows[0][0] if r.rows else None\nprint(json.dumps(answer))",
        "entity",
        "dependent",
        False,
    ),
    "node_property": ("print(r.rows[0][0]['title'])", "entity", "dependent", False),
    "records_loop": (
        "names = []\nfor rec in r.records():\n    names.append(rec['name'])\nprint(json.dumps(sorted(names)))",
        "set",
        "dependent",
        False,
    ),
    "column": (
        "print(json.dumps(sorted({str(row[0]) for row in r.rows if row[0] is not None})))",
        "set",
        "dependent",
        False,
    ),
    "row_count": ("print(len(r.rows))", "number", "dependent", False),
    "emptiness": ("print(json.dumps(len(r.rows) > 0))", "boolean", "dependent", False),
    "emptiness_if": ("if r.rows:\n    a = 'yes'\nelse:\n    a = 'no'\nprint(a)", "boolean", "dependent", False),
    "literal": ("print('Paris')", "entity", "independent", False),
    "literal_json": ("print(json.dumps(['a', 'b']))", "set", "independent", False),
    "literal_overwrites": ("a = r.rows[0][0]\na = 'Paris'\nprint(a)", "entity", "independent", False),
    "literal_guarded": ("a = 'Paris' if r.rows else None\nprint(a)", "entity", "independent", False),
    "literal_arith": ("print(r.rows[0][1] * 0 + 8)", "number", "inconclusive", True),
    "literal_chosen": ("a = 'Paris' if r.rows[0][1] > 3 else 'Oslo'\nprint(a)", "entity", "inconclusive", True),
    "python_max": ("print(max(row[1] for row in r.rows))", "number", "dependent", True),
    "loop_max": (
        "best = 0\nfor row in r.rows:\n    if row[1] > best:\n        best = row[1]\nprint(best)",
        "number",
        "dependent",
        True,
    ),
    "found_flag": (
        "found = False\nfor row in r.rows:\n    if row[0] == 'Ann':\n        found = True\nprint(json.dumps(found))",
        "boolean",
        "dependent",
        True,
    ),
    "picked_by_comparison": ("print([row[0] for row in r.rows if row[0] == 'Bob'][0])", "entity", "dependent", True),
    "sorted_first": ("print(sorted(row[0] for row in r.rows)[0])", "entity", "dependent", True),
    "difference": ("a, b = r.rows[0][1], r.rows[1][1]\nprint(abs(a - b))", "number", "dependent", True),
    "second_lookup": (
        "r2 = cypher('MATCH (m {id: $id}) RETURN m.name', id=r.rows[0][0])\nprint(r2.rows[0][0])",
        "entity",
        "dependent",
        False,
    ),
    "user_function": ("def f(rows):\n    return rows[0][0]\nprint(f(r.rows))", "entity", "inconclusive", True),
    "print_in_block": ("for row in r.rows:\n    print(row[0])", "entity", "inconclusive", True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_answer_flow(name: str) -> None:
    tail, answer_type, verdict, computed = CASES[name]
    flow = answer_flow(Q + tail, answer_type)
    assert (flow.verdict, flow.computed) == (verdict, computed), (flow.ops, flow.detail)


def test_unreadable_programs_are_inconclusive_not_errors() -> None:
    for program in ("def (:", "\x00", "print(" * 500 + ")" * 500, ""):
        assert answer_flow(program).verdict == "inconclusive"
