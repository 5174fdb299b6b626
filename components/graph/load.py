"""Write a :class:`~components.graph.model.GraphData` into a new Ladybug database folder.

The database is built in a temporary sibling folder and renamed into place only when complete,
so a failed or interrupted import never leaves a partial database behind. Bulk loading uses
``COPY <table> FROM $table`` with a pyarrow table passed as a *parameter* (no temp files, no
values in query text); only catalog identifiers — validated — appear in DDL text.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
import tempfile
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ladybug
import pyarrow as pa
from tqdm.auto import tqdm

from components.graph.errors import ImportFormatError
from components.graph.ladybug import DB_FILENAME
from components.graph.manifest import write_manifest
from components.graph.schema import quote_identifier
from components.graph.model import PROPERTY_TYPES, GraphData

__all__ = ["LoadStats", "load_graph"]

_ARROW = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
    "STRING[]": pa.list_(pa.string()),
    "INT64[]": pa.list_(pa.int64()),
    "DOUBLE[]": pa.list_(pa.float64()),
}


@dataclass(frozen=True)
class LoadStats:
    nodes: int
    relationships: int
    node_labels: int
    relationship_types: int
    db_dir: str


def _coerce(value: Any, ptype: str) -> Any:
    """Make a value fit its inferred column type (a STRING column may hold mixed values)."""
    if value is None:
        return None
    if ptype.endswith("[]"):
        inner = ptype[:-2]
        return [_coerce(v, inner) for v in value]
    if ptype == "STRING" and not isinstance(value, str):
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.isoformat()
        return json.dumps(value) if isinstance(value, (list, dict)) else str(value)
    if ptype == "DOUBLE" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _check_type(ptype: str, where: str) -> str:
    if ptype not in PROPERTY_TYPES:
        raise ImportFormatError(f"unsupported property type {ptype!r} for {where}")
    return ptype


def _columns(props: dict[str, str], rows: list[dict[str, Any]], where: str) -> dict[str, pa.Array]:
    out = {}
    for name, ptype in props.items():
        _check_type(ptype, f"{where}.{name}")
        values = [_coerce(r.get(name), ptype) for r in rows]
        try:
            out[name] = pa.array(values, type=_ARROW[ptype])
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise ImportFormatError(f"values of {where}.{name} do not fit {ptype}: {exc}") from exc
    return out


def _ddl_props(props: dict[str, str]) -> str:
    return "".join(f", {quote_identifier(n)} {t}" for n, t in props.items())


def _build(data: GraphData, db_path: Path) -> None:
    db = ladybug.Database(str(db_path))
    conn = ladybug.Connection(db)
    # one step per table; shown on a terminal only (disable=None)
    bar = tqdm(total=len(data.nodes) + len(data.rels), desc="loading graph", unit="table", disable=None)
    try:
        ids: dict[str, set[str]] = {}
        for label, ns in sorted(data.nodes.items()):
            props = {k: v for k, v in ns.properties.items() if k != "id"}
            conn.execute(
                f"CREATE NODE TABLE {quote_identifier(label)}(id STRING PRIMARY KEY{_ddl_props(props)})"
            )
            seen: set[str] = set()
            for row in ns.rows:
                if row["id"] in seen:
                    raise ImportFormatError(f"duplicate node id {row['id']!r} for label {label}")
                seen.add(row["id"])
            ids[label] = seen
            if ns.rows:
                cols = {"id": pa.array([r["id"] for r in ns.rows], pa.string())}
                cols.update(_columns(props, ns.rows, label))
                conn.execute(f"COPY {quote_identifier(label)} FROM $t", {"t": pa.table(cols)})
            bar.update(1)
        for rtype, rs in sorted(data.rels.items()):
            by_pair: dict[tuple[str, str], list] = defaultdict(list)
            for rel in rs.rows:
                for lbl, nid in ((rel.src_label, rel.src_id), (rel.dst_label, rel.dst_id)):
                    if nid not in ids.get(lbl, ()):
                        raise ImportFormatError(
                            f"relationship {rtype} refers to unknown node {lbl}:{nid!r}"
                        )
                by_pair[(rel.src_label, rel.dst_label)].append(rel)
            bar.update(1)
            if not by_pair:
                continue
            pairs = ", ".join(
                f"FROM {quote_identifier(s)} TO {quote_identifier(d)}" for s, d in sorted(by_pair)
            )
            conn.execute(f"CREATE REL TABLE {quote_identifier(rtype)}({pairs}{_ddl_props(rs.properties)})")
            for (src, dst), rels in sorted(by_pair.items()):
                cols = {
                    "from": pa.array([r.src_id for r in rels], pa.string()),
                    "to": pa.array([r.dst_id for r in rels], pa.string()),
                }
                cols.update(_columns(rs.properties, [dict(r.properties) for r in rels], rtype))
                # COPY options cannot be parameters; the labels are validated identifiers.
                quote_identifier(src), quote_identifier(dst)
                conn.execute(
                    f"COPY {quote_identifier(rtype)} FROM $t (from='{src}', to='{dst}')",
                    {"t": pa.table(cols)},
                )
    finally:
        bar.close()
        conn.close()
        db.close()


def load_graph(data: GraphData, db_dir: str | Path, *, overwrite: bool = False) -> LoadStats:
    """Create ``db_dir/graph.lbug`` from ``data`` (property types inferred from the values).

    Refuses to touch an existing non-empty folder unless ``overwrite``; the old database is
    replaced only after the new one is complete.
    """
    target = Path(db_dir)
    if target.exists() and any(target.iterdir()) and not overwrite:
        raise ImportFormatError(f"{target} already exists and is not empty (use overwrite)")
    data.infer_types()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _build(data, tmp / DB_FILENAME)
        stats = LoadStats(
            nodes=data.node_count,
            relationships=data.rel_count,
            node_labels=len(data.nodes),
            relationship_types=sum(1 for rs in data.rels.values() if rs.rows),
            db_dir=str(target),
        )
        write_manifest(tmp, DB_FILENAME, asdict(stats))
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return stats
