"""Teacher programs a solver can write: nodes found by the names the question uses.

A certified program finds the nodes its question is about by primary key — ``{`id`: $start}``,
``n.`id` IN $ids``, ``o.`id` <> $start`` with ``{'start': 'author_157'}`` — but the question
says *"the author "Katarzyna Silva""*: a solver trained on the id form learns to invent ids. For
training, :func:`name_anchored` rewrites every such anchor to the label's display property
(``name``, ``title``, … as the question mentions the node) with the displayed values, and
:func:`solver_rows` keeps a rewrite only when the program still prints exactly what the
certified program printed, run in the sandbox (a name several nodes share changes the answer; then
the original program is kept). The gold evidence queries the ``graphcert`` reward compares with
are rewritten the same way, so a solver that anchors by name is scored against evidence that does.

Only anchors of the exact forms the template quizzer writes are rewritten; any other use of an
anchored parameter leaves the program as it is.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.quizzer.context import display_property

__all__ = ["name_anchored", "rewrite_query", "solver_rows"]

_LABELLED = re.compile(r"\((\w+):`([^`]+)`")


def _q(name: str) -> str:
    return f"`{name}`"


def rewrite_query(query: str, schema: GraphSchema) -> tuple[str, dict[str, str]] | None:
    """``(query with primary-key anchors on display properties, parameter → label)``; ``None``
    when nothing is anchored by primary key, or a parameter is also used another way."""
    labels = dict(_LABELLED.findall(query))
    anchored: dict[str, str] = {}
    out = query

    def swap(label: str, param: str) -> bool:
        node = schema.labels.get(label)
        if node is None or display_property(schema, label) == node.primary_key:
            return False
        if anchored.setdefault(param, label) != label:
            return False
        return True

    for var, label in labels.items():
        node = schema.labels.get(label)
        if node is None:
            continue
        pk, disp = _q(node.primary_key), _q(display_property(schema, label))
        inline = re.compile(rf"\({var}:`{re.escape(label)}` \{{{re.escape(pk)}: \$(\w+)\}}\)")
        for m in list(inline.finditer(out)):
            if swap(label, m.group(1)):
                out = out.replace(m.group(0), f"({var}:`{label}` {{{disp}: ${m.group(1)}}})")
        compared = re.compile(rf"\b{var}\.{re.escape(pk)} (IN|=|<>) \$(\w+)")
        for m in list(compared.finditer(out)):
            if swap(label, m.group(2)):
                out = out.replace(m.group(0), f"{var}.{disp} {m.group(1)} ${m.group(2)}")
    if not anchored:
        return None
    rest = out
    for var, label in labels.items():  # every use of an anchored parameter must have been rewritten
        disp = _q(display_property(schema, label)) if label in schema.labels else ""
        rest = re.sub(rf"\({var}:`{re.escape(label)}` \{{{re.escape(disp)}: \$\w+\}}\)", "", rest)
        rest = re.sub(rf"\b{var}\.{re.escape(disp)} (IN|=|<>) \$\w+", "", rest)
    if any(re.search(rf"\${p}\b", rest) for p in anchored):
        return None
    return out, anchored


def _display_values(query_path: Any, schema: GraphSchema, label: str, ids: Sequence[Any]) -> dict[Any, Any] | None:
    node = schema.labels[label]
    text = (
        f"MATCH (n:{_q(label)}) WHERE n.{_q(node.primary_key)} IN $ids "
        f"RETURN n.{_q(node.primary_key)} AS id, n.{_q(display_property(schema, label))} AS name"
    )
    try:
        rows = query_path.run(text, {"ids": list(ids)}).rows
    except GraphError:
        return None
    found = {r[0]: r[1] for r in rows}
    return found if all(i in found and found[i] is not None for i in ids) else None


def _renamed(
    params: Mapping[str, Any], anchored: Mapping[str, str], query_path: Any, schema: GraphSchema
) -> dict | None:
    out = dict(params)
    for param, label in anchored.items():
        value = params.get(param)
        ids = value if isinstance(value, list) else [value]
        names = _display_values(query_path, schema, label, ids)
        if names is None:
            return None
        out[param] = [names[i] for i in ids] if isinstance(value, list) else names[value]
    return out


def name_anchored(program: str, schema: GraphSchema, query_path: Any) -> str | None:
    """``program`` with each ``cypher('…', **{…})`` call anchored by display names (module
    docstring); ``None`` when no call can be rewritten."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cypher"):
            continue
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            continue
        spread = [k for k in node.keywords if k.arg is None]
        if len(spread) != 1 or len(node.keywords) != 1:
            continue
        try:
            params = ast.literal_eval(spread[0].value)
        except ValueError:
            continue
        rewritten = rewrite_query(node.args[0].value, schema)
        if rewritten is None or not isinstance(params, dict):
            continue
        new_params = _renamed(params, rewritten[1], query_path, schema)
        if new_params is not None:
            edits.append((node, f"cypher({rewritten[0]!r}, **{new_params!r})"))
    if not edits:
        return None
    lines = program.splitlines(keepends=True)
    for node, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        if node.lineno != node.end_lineno:
            return None  # calls spanning lines are left alone
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[: node.col_offset] + text + line[node.end_col_offset :]
    return "".join(lines)


def _printed(program: str, query_path: Any, schema: GraphSchema) -> str | None:
    from components.tools.sandbox import SandboxEpisode

    with SandboxEpisode(query_path, schema=schema) as episode:
        cell = episode.run(program)
    return cell.stdout if cell.ok else None


def _rewrite_evidence(evidence_json: str | None, schema: GraphSchema, query_path: Any) -> str | None:
    """The gold evidence queries anchored by names too (the reward compares their structure)."""
    if not evidence_json:
        return evidence_json
    evidence = json.loads(evidence_json)
    for item in evidence if isinstance(evidence, list) else []:
        rewritten = rewrite_query(str(item.get("query", "")), schema)
        if rewritten is None:
            continue
        params = _renamed(item.get("params") or {}, rewritten[1], query_path, schema)
        if params is not None:
            item["query"], item["params"] = rewritten[0], params
    return json.dumps(evidence, ensure_ascii=False, default=str)


def solver_rows(rows: Sequence[Mapping[str, Any]], db_location: str) -> tuple[list[dict[str, Any]], int]:
    """``(rows, rewritten)``: each certified row with its ``final_program`` (and gold
    ``evidence_json``) anchored by names when that prints what the certified program printed;
    the count of rows rewritten."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    out, rewritten = [], 0
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        query_path = ReadOnlyQueryPath(backend, schema=schema)
        for row in rows:
            program = str(row.get("final_program") or "")
            named = name_anchored(program, schema, query_path) if program else None
            if named is not None and _printed(named, query_path, schema) == _printed(program, query_path, schema):
                row = {
                    **row,
                    "final_program": named,
                    "evidence_json": _rewrite_evidence(row.get("evidence_json"), schema, query_path),
                }
                rewritten += 1
            out.append(dict(row))
    finally:
        backend.close()
    return out, rewritten
