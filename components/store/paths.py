"""Where graphdojo keeps its data: ``$GRAPHDOJO_DATA`` if set, else ``<project root>/data``
(absolute — never relative to the current directory)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PROJECT_ROOT", "data_root"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def data_root() -> Path:
    env = os.environ.get("GRAPHDOJO_DATA")
    return Path(env).expanduser().resolve() if env else PROJECT_ROOT / "data"
