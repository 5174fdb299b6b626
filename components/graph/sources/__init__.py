"""Graph importers ("sources"): each turns some input into an in-memory :class:`GraphData`.

Sources are looked up by name in ``SOURCE_FORMATS`` (configs and the CLI refer to them by name):

========================  =====================================  ===============================
format                    ``src``                                options
========================  =====================================  ===============================
``generator``             a demo domain: ``academic``,           ``seed: int = 0``,
                          ``ecommerce``, ``biomedical``          ``scale: int = 2000`` (≈ nodes)
``grbench-json``          a GRBench ``graph.json`` (or folder)   ``missing_neighbors="error"``
``csv``                   a folder with ``nodes/``,              —
                          ``relationships/``
``cypher-script``         a Cypher CREATE script file            —
========================  =====================================  ===============================

>>> g = read_source("generator", "biomedical", seed=3, scale=200)
>>> sorted(g.nodes)
['Compound', 'Disease', 'Gene', 'Symptom']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from components.graph.errors import ImportFormatError
from components.graph.model import GraphData
from components.graph.sources.csv_files import read_csv_dir
from components.graph.sources.cypher_script import read_cypher_script
from components.graph.sources.demo import DEMO_DOMAINS, generate, scale_for_edges
from components.graph.sources.grbench import read_grbench

__all__ = [
    "DEMO_DOMAINS",
    "SOURCE_FORMATS",
    "SourceReader",
    "generate",
    "read_csv_dir",
    "read_cypher_script",
    "read_grbench",
    "read_source",
    "scale_for_edges",
]

SourceReader = Callable[..., GraphData]
"""``reader(src, **options) -> GraphData``."""


def _read_generator(src: str | Path, *, seed: int = 0, scale: int | None = None) -> GraphData:
    return generate(str(src), seed=seed, scale=scale)


SOURCE_FORMATS: dict[str, SourceReader] = {
    "generator": _read_generator,
    "grbench-json": read_grbench,
    "csv": read_csv_dir,
    "cypher-script": read_cypher_script,
}


def read_source(fmt: str, src: str | Path, **options: object) -> GraphData:
    """Import ``src`` with the reader registered as ``fmt`` in ``SOURCE_FORMATS``.

    Unknown formats and options the reader does not take raise :class:`ImportFormatError`.
    """
    reader = SOURCE_FORMATS.get(fmt)
    if reader is None:
        raise ImportFormatError(f"unknown source format {fmt!r}; valid formats: {', '.join(SOURCE_FORMATS)}")
    try:
        inspect.signature(reader).bind(src, **options)
    except TypeError as exc:
        raise ImportFormatError(f"bad options for source format {fmt!r}: {exc}") from None
    return reader(src, **options)
