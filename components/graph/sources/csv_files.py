"""Import a folder of CSV files into :class:`GraphData`.

Format (``SRC`` is a directory)::

    SRC/
      nodes/<Label>.csv           one file per node label
      relationships/<TYPE>.csv    one file per relationship type (folder optional)

* Files are UTF-8 (a byte-order mark is allowed), comma-separated, first line a header,
  standard CSV quoting (``"a, b"``, ``""`` for a quote inside a quoted field). Blank lines are
  skipped. Every record must have as many fields as the header. A field may hold at most
  131072 characters (Python's CSV reader limit); a longer one is a malformed record.
* The file name (without ``.csv``) is the label / relationship type; it and every column name
  must be an identifier: letters, digits and ``_``, not starting with a digit or ``_``
  (``_``-prefixed names are reserved for internal keys: the query layer drops them).
* Names follow the graph engine's catalog, which is case-insensitive: two node files
  ``Person.csv`` / ``person.csv``, a node file and a relationship file with the same name in any
  case (``nodes/Knows.csv``, ``relationships/KNOWS.csv``), two columns ``name`` / ``Name`` of
  one file, or a node column ``ID`` beside the ``id`` key are errors naming both names.
  Relationship columns may be called ``from`` / ``to`` (they are ordinary properties).
* ``nodes/<Label>.csv`` must have an ``id`` column: a non-empty string, unique within the
  label. Every other column is a property.
* ``relationships/<TYPE>.csv`` must have ``source`` and ``target`` columns (node ids). Optional
  ``source_label`` / ``target_label`` columns name the endpoint labels; where they are absent or
  empty the label is looked up by id, and an id that exists under two labels is an error. Every
  other column is a property.
* Cell typing, per property column: an empty cell is null; the column is INT64 if every
  non-empty cell is an integer (``-12``), else DOUBLE if every one is a decimal number (``3``,
  ``-0.5``, ``1e3``; numbers with leading zeros such as ``007`` are text), else BOOLEAN if
  every one is ``true`` / ``false`` (any case), else DATE if every one is ``YYYY-MM-DD``, else
  STRING. ``id``, ``source``, ``target`` and the label columns are always strings.
* Numbers are never silently changed: in a column whose cells are all numbers, an integer
  outside INT64 (-2**63 .. 2**63-1, e.g. ``99999999999999999999``) or a decimal that overflows
  a double (``1e400``) is an error naming the file, line and column. (In a column that also holds
  text, every cell — that one too — stays text.)
* Empty input is an error: a zero-byte file (no header), and a folder whose node files hold no
  node at all (``... is empty``). A header-only file among others is fine: it declares its label
  or relationship type.

Errors name the file and line: missing header column, bad column or file name, wrong field
count, empty or duplicate node id, unknown or ambiguous relationship endpoint, out-of-range
number, names that clash in the engine's catalog. An unreadable file is an error naming it.
"""

from __future__ import annotations

import csv
import datetime as _dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.graph.errors import GraphError, ImportFormatError
from components.graph.model import CatalogNames, GraphData, NodeSet, RelSet, validate_identifier
from components.graph.sources._common import INT64_MAX, INT64_MIN, IdIndex, check_graph

__all__ = ["read_csv_dir", "type_column"]

_NODE_KEYS = ("id",)
_REL_KEYS = ("source", "target")
_REL_OPTIONAL = ("source_label", "target_label")

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


class CellOutOfRange(ValueError):
    """A number in a numeric column that no column type holds exactly; ``index`` is the cell's
    position in the column."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _fits_int64(cell: str) -> bool:
    """``cell`` matches ``_INT``; checked by length first (``int()`` refuses > 4300 digits)."""
    return len(cell.lstrip("+-")) <= 19 and INT64_MIN <= int(cell) <= INT64_MAX


def _parse_int(cell: str) -> int | None:
    if not _INT.match(cell) or not _fits_int64(cell):
        return None
    return int(cell)


def _parse_float(cell: str) -> float | None:
    return float(cell) if _FLOAT.match(cell) else None


def _parse_bool(cell: str) -> bool | None:
    return {"true": True, "false": False}.get(cell.lower())


def _parse_date(cell: str) -> _dt.date | None:
    if not _DATE.match(cell):
        return None
    try:
        return _dt.date.fromisoformat(cell)
    except ValueError:
        return None


# in order of preference; STRING is the fallback
_PARSERS: tuple[tuple[str, Callable[[str], Any]], ...] = (
    ("INT64", _parse_int),
    ("DOUBLE", _parse_float),
    ("BOOLEAN", _parse_bool),
    ("DATE", _parse_date),
)


def type_column(cells: list[str]) -> tuple[str, list[Any]]:
    """Infer a column's type and parse its cells (``""`` -> ``None``).

    >>> type_column(["1", "", "-3"])
    ('INT64', [1, None, -3])
    >>> type_column(["1", "2.5"])
    ('DOUBLE', [1.0, 2.5])
    >>> type_column(["2024-02-30"])[0]
    'STRING'
    >>> type_column(["1", "99999999999999999999"])  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    components.graph.sources.csv_files.CellOutOfRange: integer 99999999999999999999 does not fit INT64
    """
    present = [c for c in cells if c != ""]
    if present and all(_FLOAT.match(c) for c in present):
        _check_numeric(cells)
    if present:
        for name, parse in _PARSERS:
            parsed = [parse(c) for c in present]
            if all(p is not None for p in parsed):
                it = iter(parsed)
                return name, [None if c == "" else next(it) for c in cells]
    return "STRING", [None if c == "" else c for c in cells]


def _check_numeric(cells: list[str]) -> None:
    for i, cell in enumerate(cells):
        if cell == "":
            continue
        if _INT.match(cell):
            if not _fits_int64(cell):
                shown = cell if len(cell) <= 40 else f"{cell[:20]}…({len(cell)} digits)"
                raise CellOutOfRange(
                    f"integer {shown} does not fit INT64 (-2**63 .. 2**63-1) and would lose digits as a DOUBLE", i
                )
        elif float(cell) in (float("inf"), float("-inf")):
            shown = cell if len(cell) <= 40 else f"{cell[:20]}…"
            raise CellOutOfRange(f"number {shown} is out of range for DOUBLE", i)


@dataclass
class _Table:
    path: str
    header: list[str]
    lines: list[int]  # line of each record (its first line when a quoted field spans lines)
    records: list[list[str]]

    def column(self, name: str) -> list[str]:
        i = self.header.index(name)
        return [r[i] for r in self.records]

    def properties(self, reserved: tuple[str, ...]) -> dict[str, tuple[str, list[Any]]]:
        names = [name for name in self.header if name not in reserved]
        out = {}
        for name in names:
            try:
                out[name] = type_column(self.column(name))
            except CellOutOfRange as exc:
                raise ImportFormatError(f"column {name}: {exc}", path=self.path, line=self.lines[exc.index]) from None
        return out


def _records(f: Any, where: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(f, strict=True)
    start = 1
    try:
        for record in reader:
            if record:
                yield start, record
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ImportFormatError(f"malformed CSV record: {exc}", path=where, line=start) from None


def _read_table(
    path: Path, required: tuple[str, ...], names: CatalogNames, table: str, optional: tuple[str, ...] = ()
) -> _Table:
    where = str(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            rows = list(_records(f, where))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text: {exc.reason}", path=where) from None
    except OSError as exc:
        raise ImportFormatError(f"cannot read the file: {exc.strerror or exc}", path=where) from None
    if not rows:
        raise ImportFormatError("the file is empty: a header line is required", path=where, line=1)
    header_line, header = rows[0]
    header = [h.strip() for h in header]
    for name in header:
        _identifier(name, "column name", where, header_line)
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise ImportFormatError(f"duplicate column(s) {', '.join(dupes)}", path=where, line=header_line)
    missing = [c for c in required if c not in header]
    if missing:
        raise ImportFormatError(f"header lacks required column(s) {', '.join(missing)}", path=where, line=header_line)
    for name in header:
        if name not in required + optional:
            names.column(table, name, where, header_line)
    for line, record in rows[1:]:
        if len(record) != len(header):
            raise ImportFormatError(
                f"expected {len(header)} fields (as in the header), found {len(record)}",
                path=where,
                line=line,
            )
    return _Table(where, header, [ln for ln, _ in rows[1:]], [r for _, r in rows[1:]])


def _identifier(name: str, what: str, where: str, line: int | None = None) -> str:
    try:
        return validate_identifier(name, what)
    except GraphError as exc:
        raise ImportFormatError(exc.message, path=where, line=line) from None


def _csv_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".csv")
    except OSError as exc:
        raise ImportFormatError(f"cannot list the folder: {exc.strerror or exc}", path=str(folder)) from None


def _read_nodes(path: Path, graph: GraphData, index: IdIndex, names: CatalogNames, files: dict[str, Path]) -> None:
    label = _identifier(path.stem, "label (file name)", str(path))
    _register(names, files, label, "label", path)
    table = _read_table(path, _NODE_KEYS, names, label)
    props = table.properties(_NODE_KEYS)
    first_line: dict[str, int] = {}
    for i, (line, node_id) in enumerate(zip(table.lines, table.column("id"), strict=True)):
        if node_id == "":
            raise ImportFormatError("empty id", path=table.path, line=line)
        if node_id in first_line:
            raise ImportFormatError(
                f"duplicate id {node_id!r} (first on line {first_line[node_id]})",
                path=table.path,
                line=line,
            )
        first_line[node_id] = line
        graph.add_node(label, node_id, {name: values[i] for name, (_, values) in props.items()})
        index.add(node_id, label)
    graph.nodes.setdefault(label, NodeSet(label))  # an empty file still declares its label


def _endpoint(node_id: str, label: str, index: IdIndex, role: str, where: str, line: int) -> str:
    if label:
        if not index.has(label, node_id):
            raise ImportFormatError(f"unknown {role} node {label}:{node_id!r}", path=where, line=line)
        return label
    labels = index.labels_of(node_id)
    if not labels:
        raise ImportFormatError(f"unknown {role} node id {node_id!r}", path=where, line=line)
    if len(labels) > 1:
        raise ImportFormatError(
            f"{role} id {node_id!r} exists under labels {', '.join(labels)}: add a {role}_label column",
            path=where,
            line=line,
        )
    return labels[0]


def _register(names: CatalogNames, files: dict[str, Path], name: str, kind: str, path: Path) -> None:
    try:
        names.table(name, kind)
    except ImportFormatError as exc:
        other = files[name.lower()]
        raise ImportFormatError(f"{exc.message} (see {other})", path=str(path)) from None
    files[name.lower()] = path


def _read_rels(path: Path, graph: GraphData, index: IdIndex, names: CatalogNames, files: dict[str, Path]) -> None:
    rtype = _identifier(path.stem, "relationship type (file name)", str(path))
    _register(names, files, rtype, "relationship type", path)
    table = _read_table(path, _REL_KEYS, names, rtype, _REL_OPTIONAL)
    props = table.properties(_REL_KEYS + _REL_OPTIONAL)
    empty = [""] * len(table.records)
    columns = {c: (table.column(c) if c in table.header else empty) for c in _REL_KEYS + _REL_OPTIONAL}
    for i, line in enumerate(table.lines):
        ends = []
        for role in ("source", "target"):
            node_id, label = columns[role][i], columns[f"{role}_label"][i]
            ends.append((_endpoint(node_id, label, index, role, table.path, line), node_id))
        properties = {name: values[i] for name, (_, values) in props.items()}
        graph.add_rel(rtype, ends[0], ends[1], properties)
    graph.rels.setdefault(rtype, RelSet(rtype))  # an empty file still declares its type


def read_csv_dir(path: str | Path) -> GraphData:
    """Read ``path/nodes/*.csv`` and ``path/relationships/*.csv`` (see the module docstring)."""
    root = Path(path)
    nodes_dir, rels_dir = root / "nodes", root / "relationships"
    if not nodes_dir.is_dir():
        raise ImportFormatError("expected a folder with a nodes/ subfolder", path=str(root))
    node_files = _csv_files(nodes_dir)
    if not node_files:
        raise ImportFormatError("no .csv files in nodes/", path=str(nodes_dir))
    graph, index, names, files = GraphData(), IdIndex(), CatalogNames(), {}
    for f in node_files:
        _read_nodes(f, graph, index, names, files)
    if graph.node_count == 0:
        raise ImportFormatError(
            f"the folder is empty: no node rows in {', '.join(p.name for p in node_files)}",
            path=str(nodes_dir),
        )
    if rels_dir.is_dir():
        for f in _csv_files(rels_dir):
            _read_rels(f, graph, index, names, files)
    return check_graph(graph, root)
