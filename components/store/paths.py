"""Where graphdojo keeps its data — the *data root* — resolved in one place, first match wins:

1. ``$GRAPHDOJO_DATA``;
2. the project the command runs in: the nearest ``pyproject.toml`` at or above the working
   directory that has a ``[tool.graphdojo]`` table — its ``data_root`` key (relative to that
   file; default ``data``);
3. ``./data`` in the working directory.

The data root never depends on where the package is installed (a regular install would
otherwise write into ``site-packages``). It holds the artifacts, the catalog, the model caches,
Dagster's instance (``dagster_home/``, unless ``$DAGSTER_HOME`` is set) and the run logs
(``logs/``). A Dagster deployment can also set it per run: the ``store`` resource's
``data_root`` config.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["PROJECT_TABLE", "data_root", "project_file"]

PROJECT_TABLE = "graphdojo"


def project_file(start: Path | None = None) -> tuple[Path, dict] | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (default: the working directory)
    with a ``[tool.graphdojo]`` table, and that table; ``None`` when there is none. A
    ``pyproject.toml`` that does not parse is skipped."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            table = tomllib.loads(candidate.read_text(encoding="utf-8")).get("tool", {}).get(PROJECT_TABLE)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(table, dict):
            return candidate, table
    return None


def data_root(start: Path | None = None) -> Path:
    """The data root (module docstring); always absolute."""
    env = os.environ.get("GRAPHDOJO_DATA")
    if env:
        return Path(env).expanduser().resolve()
    found = project_file(start)
    if found is not None:
        pyproject, table = found
        configured = table.get("data_root", "data")
        if not isinstance(configured, str) or not configured:
            raise ValueError(f"{pyproject}: [tool.{PROJECT_TABLE}] data_root must be a non-empty string")
        return (pyproject.parent / Path(configured).expanduser()).resolve()
    return ((start or Path.cwd()) / "data").resolve()
