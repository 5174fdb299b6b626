"""Write a :class:`~components.graph.model.GraphData` into a new Ladybug database folder.

The database is built in a temporary sibling folder and renamed into place only when complete,
so a failed or interrupted import never leaves a partial database behind. Bulk loading uses
``COPY <table> FROM $table`` with a pyarrow table passed as a *parameter* (no temp files, no
values in query text); only catalog identifiers — validated — appear in DDL text.

Engine-level rules (whoever built the ``GraphData``; the importers check the same rules earlier
so that their errors name the file and line). Every failure is an :class:`ImportFormatError`;
no engine exception escapes, and nothing is left behind:

* A graph without nodes is refused ("nothing to import").
* Catalog names (:class:`~components.graph.model.CatalogNames`): labels and relationship types
  share one case-insensitive namespace, and so do the properties of one label or type (the
  node key ``id`` included). A clash is refused *before* any table is created, naming both.
* Values must fit their column: integers INT64, no lone surrogates in strings, etc.; a value
  that does not fit names ``Label.property``.
* Relationship properties called ``from`` / ``to`` (any case) are accepted. ``COPY`` into a
  relationship table takes its columns by position, but the engine binds a *property* named
  ``from``/``to`` to the endpoint columns, so such a property would silently receive the endpoint
  ids. So it is created under a placeholder name (``gd_prop_<n>``), copied, then renamed with
  ``ALTER TABLE ... RENAME``; the endpoint columns of the Arrow table are named ``_src``/``_dst``
  (a ``_``-prefixed name can never be a property).
* Bounded engine memory: Ladybug by default reserves 8 TiB of address space for the database
  (``max_db_size``) plus ~80% of RAM for its buffer pool, so an import fails under an
  address-space limit (``ulimit -v``, some containers). The database is opened with
  ``buffer_pool_size`` = max(512 MiB, 2 x the data's estimated size) and ``max_db_size`` = the
  power of two >= max(1 GiB, 4 x the estimate) (the database file measured 0.8-1.2 x the
  estimate), i.e. 1.5 GiB of address space for a small graph. ``load_graph(buffer_pool_mb=,
  max_db_mb=)`` override them; an import that outgrows them fails cleanly and says which to raise.
  The Arrow arrays handed to ``COPY`` come from the system allocator, not pyarrow's mimalloc
  pool, which would reserve another ~1 GiB of address space. Checked: an import followed by a
  fingerprint in one process (what ``graphdojo graph import`` does) runs under ``ulimit -v
  4000000``; before, the import died with "Mmap for size 8796093022208 failed".
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

from components.graph.errors import GraphError, ImportFormatError
from components.graph.ladybug import DB_FILENAME, power_of_two_at_least
from components.graph.manifest import write_manifest
from components.graph.model import PROPERTY_TYPES, CatalogNames, GraphData
from components.graph.schema import quote_identifier

__all__ = ["EngineSettings", "LoadStats", "engine_settings", "estimate_bytes", "load_graph"]

_MIB = 1 << 20
MIN_BUFFER_POOL = 512 * _MIB
MIN_MAX_DB_SIZE = 1 << 30
_ENDPOINTS = ("_src", "_dst")  # Arrow column names of rel endpoints: never a property name
# pyarrow's default pool (mimalloc) reserves ~1 GiB of address space on first use; under
# ``ulimit -v`` that and the engine's reservation do not both fit, so the import's arrays come
# from the system allocator (they are handed to the engine once and dropped).
_POOL = pa.system_memory_pool()
_COLLIDING = frozenset({"from", "to"})


@dataclass(frozen=True)
class EngineSettings:
    buffer_pool_size: int  # bytes
    max_db_size: int  # bytes, a power of two


def _value_bytes(value: Any) -> int:
    if value is None:
        return 1
    if isinstance(value, str):
        return len(value) + 4  # len() counts characters: close enough for UTF-8 text in bulk
    if isinstance(value, (list, tuple)):
        return 8 + sum(_value_bytes(v) for v in value)
    return 8


def estimate_bytes(data: GraphData) -> int:
    """Rough size of ``data`` as stored (the engine's file measured 0.8-1.2 x this)."""
    total = 0
    for ns in data.nodes.values():
        for row in ns.rows:
            total += 16 + sum(_value_bytes(v) for v in row.values())
    for rs in data.rels.values():
        for rel in rs.rows:
            total += 32 + len(rel.src_id) + len(rel.dst_id)
            total += sum(_value_bytes(v) for v in rel.properties.values())
    return total


def engine_settings(data: GraphData, buffer_pool_mb: int | None = None, max_db_mb: int | None = None) -> EngineSettings:
    """The bounded buffer pool and database size an import of ``data`` runs with (see the
    module docstring); ``max_db_mb`` is rounded up to a power of two."""
    est = estimate_bytes(data)
    pool = buffer_pool_mb * _MIB if buffer_pool_mb else max(MIN_BUFFER_POOL, -(-2 * est // _MIB) * _MIB)
    max_db = max_db_mb * _MIB if max_db_mb else max(MIN_MAX_DB_SIZE, 4 * est)
    if pool <= 0 or max_db <= 0:
        raise ImportFormatError("buffer_pool_mb and max_db_mb must be positive")
    return EngineSettings(pool, power_of_two_at_least(max_db))


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
        try:
            values = [_coerce(r.get(name), ptype) for r in rows]
            out[name] = pa.array(values, type=_ARROW[ptype], memory_pool=_POOL)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise ImportFormatError(f"values of {where}.{name} do not fit {ptype}: {exc}") from None
    return out


def _id_column(ids: list[str], where: str) -> pa.Array:
    try:
        return pa.array(ids, pa.string(), memory_pool=_POOL)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise ImportFormatError(f"node ids of {where} are not valid strings: {exc}") from None


def _placeholders(props: dict[str, str]) -> dict[str, str]:
    """Property name -> name to create it under: ``from``/``to`` get a free placeholder."""
    taken = {p.lower() for p in props}
    out, k = {}, 0
    for name in props:
        if name.lower() in _COLLIDING:
            while f"gd_prop_{k}" in taken:
                k += 1
            out[name] = f"gd_prop_{k}"
            taken.add(out[name])
        else:
            out[name] = name
    return out


def _ddl_props(props: dict[str, str]) -> str:
    return "".join(f", {quote_identifier(n)} {t}" for n, t in props.items())


def _build(data: GraphData, db_path: Path, settings: EngineSettings) -> None:
    db = None
    try:
        db = ladybug.Database(
            str(db_path), buffer_pool_size=settings.buffer_pool_size, max_db_size=settings.max_db_size
        )
        conn = ladybug.Connection(db)
    except Exception as exc:
        if db is not None:
            db.close()
        raise ImportFormatError(
            f"the graph engine could not create the database: {_engine_message(exc, settings)}"
        ) from None
    # one step per table; shown on a terminal only (disable=None)
    bar = tqdm(total=len(data.nodes) + len(data.rels), desc="loading graph", unit="table", disable=None)
    try:
        _fill(conn, data, bar)
    except GraphError:
        raise
    except Exception as exc:  # engine errors: out of space, out of memory, ...
        raise ImportFormatError(f"the graph engine refused the import: {_engine_message(exc, settings)}") from None
    finally:
        bar.close()
        conn.close()
        db.close()


def _engine_message(exc: Exception, settings: EngineSettings) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if "Maximum database size" in first:
        first += f" — pass a larger max_db_mb (was {settings.max_db_size >> 20})"
    elif "buffer pool is full" in first or "Unable to allocate memory" in first:
        first += f" — pass a larger buffer_pool_mb (was {settings.buffer_pool_size >> 20})"
    elif "Mmap" in first:
        first += (
            f" — the process may not reserve {(settings.buffer_pool_size + settings.max_db_size) >> 20} MiB "
            "of address space: lower buffer_pool_mb / max_db_mb or raise the limit (ulimit -v)"
        )
    return first


def _fill(conn: Any, data: GraphData, bar: Any) -> None:
    ids: dict[str, set[str]] = {}
    for label, ns in sorted(data.nodes.items()):
        props = {k: v for k, v in ns.properties.items() if k != "id"}
        conn.execute(f"CREATE NODE TABLE {quote_identifier(label)}(id STRING PRIMARY KEY{_ddl_props(props)})")
        seen: set[str] = set()
        for row in ns.rows:
            if row["id"] in seen:
                raise ImportFormatError(f"duplicate node id {row['id']!r} for label {label}")
            seen.add(row["id"])
        ids[label] = seen
        if ns.rows:
            cols = {"id": _id_column([r["id"] for r in ns.rows], label)}
            cols.update(_columns(props, ns.rows, label))
            conn.execute(f"COPY {quote_identifier(label)} FROM $t", {"t": pa.table(cols)})
        bar.update(1)
    for rtype, rs in sorted(data.rels.items()):
        by_pair: dict[tuple[str, str], list] = defaultdict(list)
        for rel in rs.rows:
            for lbl, nid in ((rel.src_label, rel.src_id), (rel.dst_label, rel.dst_id)):
                if nid not in ids.get(lbl, ()):
                    raise ImportFormatError(f"relationship {rtype} refers to unknown node {lbl}:{nid!r}")
            by_pair[(rel.src_label, rel.dst_label)].append(rel)
        bar.update(1)
        if not by_pair:
            continue
        pairs = ", ".join(f"FROM {quote_identifier(s)} TO {quote_identifier(d)}" for s, d in sorted(by_pair))
        created = _placeholders(rs.properties)
        ddl_props = {created[n]: t for n, t in rs.properties.items()}
        conn.execute(f"CREATE REL TABLE {quote_identifier(rtype)}({pairs}{_ddl_props(ddl_props)})")
        for (src, dst), rels in sorted(by_pair.items()):
            cols = {
                _ENDPOINTS[0]: pa.array([r.src_id for r in rels], pa.string(), memory_pool=_POOL),
                _ENDPOINTS[1]: pa.array([r.dst_id for r in rels], pa.string(), memory_pool=_POOL),
            }
            values = _columns(rs.properties, [dict(r.properties) for r in rels], rtype)
            cols.update({created[n]: v for n, v in values.items()})  # in DDL order: COPY maps by position
            # COPY options cannot be parameters; the labels are validated identifiers.
            quote_identifier(src), quote_identifier(dst)
            conn.execute(
                f"COPY {quote_identifier(rtype)} FROM $t (from='{src}', to='{dst}')",
                {"t": pa.table(cols)},
            )
        for name, placeholder in created.items():
            if name != placeholder:
                conn.execute(
                    f"ALTER TABLE {quote_identifier(rtype)} RENAME {quote_identifier(placeholder)} "
                    f"TO {quote_identifier(name)}"
                )


def load_graph(
    data: GraphData,
    db_dir: str | Path,
    *,
    overwrite: bool = False,
    buffer_pool_mb: int | None = None,
    max_db_mb: int | None = None,
) -> LoadStats:
    """Create ``db_dir/graph.lbug`` from ``data`` (property types inferred from the values).

    Refuses to touch an existing non-empty folder unless ``overwrite``; the old database is
    replaced only after the new one is complete. ``buffer_pool_mb`` / ``max_db_mb`` override the
    bounded engine settings (see the module docstring).
    """
    target = Path(db_dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not overwrite:
        raise ImportFormatError(f"{target} already exists and is not empty (use overwrite)")
    if data.node_count == 0:
        raise ImportFormatError("nothing to import: the graph has no nodes")
    CatalogNames.check(data)
    data.infer_types()
    settings = engine_settings(data, buffer_pool_mb, max_db_mb)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        raise ImportFormatError(f"cannot create the database folder {target}: {exc.strerror or exc}") from None
    try:
        _build(data, tmp / DB_FILENAME, settings)
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
