"""What code a layer runs, as a list of files, and its digest — computed in one place.

A layer's code is the transitive closure of the ``components`` modules its builder's module
imports — at module level or inside functions (the project imports heavy modules lazily) —
with the ``__init__`` of every package on the way, the modules a file names in a module-level
``__code_deps__`` tuple (code it runs without importing it: a child process's script) and the C
source of a native extension. Modules outside ``components`` (the standard library, third-party packages) are not
followed: their versions are pinned by the project's constraints.

The same list serves twice, so that there is one staleness rule:

* its digest (:func:`code_digest`) is the layer's Dagster ``code_version`` and goes into every
  fingerprint the layer computes (a changed file gives new artifacts);
* the files themselves are the ``deps`` of the layer's DVC stage (``dvc.yaml`` is generated
  from :func:`code_files`; a test keeps it in sync).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["PACKAGE", "SOURCE_ROOT", "code_digest", "code_files", "imported_modules"]

PACKAGE = "components"
#: the folder that holds the ``components`` package (the repository root in a checkout)
SOURCE_ROOT = Path(__file__).resolve().parents[2]

#: native extensions (built from C at install time) → the source file they are built from
_EXTENSION_SOURCES = {"components.tools._gd_isolate": "components/tools/native/_gd_isolate.c"}


def _module_file(name: str, root: Path) -> Path | None:
    """The file of module ``name`` inside ``components`` (a package: its ``__init__.py``)."""
    if name in _EXTENSION_SOURCES:
        return root / _EXTENSION_SOURCES[name]
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """``(dotted name, is a package)`` of a file under ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


@lru_cache(maxsize=None)
def imported_modules(path: Path, root: Path = SOURCE_ROOT) -> frozenset[str]:
    """Every module name ``path`` imports anywhere in its body (relative imports resolved), for
    ``from m import x`` also ``m.x`` (``x`` may be a submodule), and the names of a module-level
    ``__code_deps__ = ("components.…", …)``."""
    if path.suffix != ".py":
        return frozenset()
    name, is_package = _module_name(path, root)
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__code_deps__" for t in node.targets
        ):
            out.update(ast.literal_eval(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return frozenset(out)


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@lru_cache(maxsize=None)
def _closure(roots: tuple[str, ...], root: Path) -> tuple[Path, ...]:
    seen: dict[Path, None] = {}
    todo = list(roots)
    visited: set[str] = set()
    while todo:
        name = todo.pop()
        if name in visited:
            continue
        visited.add(name)
        path = _module_file(name, root)
        if path is None:
            if name in roots:
                raise ValueError(f"{name!r} is not a module of the {PACKAGE} package")
            continue
        seen[path] = None
        todo.extend(_parents(name))
        todo.extend(imported_modules(path, root))
    return tuple(sorted(seen, key=lambda p: p.relative_to(root).as_posix()))


def code_files(roots: Iterable[str], source_root: Path = SOURCE_ROOT) -> list[str]:
    """The files (paths relative to ``source_root``, the folder holding the ``components``
    package, sorted) that modules ``roots`` run.

    >>> files = code_files(["components.store.digest"])
    >>> files
    ['components/__init__.py', 'components/store/__init__.py', 'components/store/atomic.py', \
'components/store/catalog.py', 'components/store/digest.py', 'components/store/fingerprint.py', \
'components/store/paths.py']
    """
    root = Path(source_root).resolve()
    return [p.relative_to(root).as_posix() for p in _closure(tuple(sorted(set(roots))), root)]


def code_digest(roots: Iterable[str], source_root: Path = SOURCE_ROOT) -> str:
    """A short hash of the names and bytes of :func:`code_files` of ``roots``."""
    h = hashlib.blake2b(digest_size=8)
    for rel in code_files(roots, source_root):
        h.update(rel.encode() + b"\0" + (Path(source_root) / rel).read_bytes() + b"\0")
    return h.hexdigest()
