"""Dagster metadata helpers shared by the layer modules (presentation only)."""

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

__all__ = ["counts_table", "md_table", "records_table"]


def counts_table(counts: Mapping[str, int], key: str) -> dg.TableMetadataValue:
    return dg.MetadataValue.table(
        [dg.TableRecord({key: k, "count": int(v)}) for k, v in counts.items()],
        schema=dg.TableSchema(columns=[dg.TableColumn(key, "string"), dg.TableColumn("count", "int")]),
    )


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def records_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> dg.TableMetadataValue:
    """A table of ``rows`` restricted to ``columns`` (``(name, dagster type)``)."""
    return dg.MetadataValue.table(
        [dg.TableRecord({name: _cell(r.get(name)) for name, _ in columns}) for r in rows],
        schema=dg.TableSchema(columns=[dg.TableColumn(name, typ) for name, typ in columns]),
    )


def md_table(rows: Sequence[Mapping[str, Any]]) -> dg.MarkdownMetadataValue:
    """``rows`` (same keys) as a Markdown table (``|`` escaped)."""
    if not rows:
        return dg.MetadataValue.md("(none)")
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return dg.MetadataValue.md("\n".join(lines))
