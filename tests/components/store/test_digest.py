"""Code digests: the files a layer runs, found by following imports inside ``components``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.store.digest import SOURCE_ROOT, code_digest, code_files


def test_the_closure_follows_lazy_imports_parent_packages_and_native_sources() -> None:
    files = code_files(["components.tools.sandbox"])
    # module level, inside functions, the package __init__ on the way, and the C source of the
    # native extension the kernel loads
    assert {
        "components/__init__.py",
        "components/tools/__init__.py",
        "components/tools/sandbox.py",
        "components/tools/_kernel.py",
        "components/tools/native/_gd_isolate.c",
    } <= set(files)
    assert all((SOURCE_ROOT / f).is_file() for f in files)
    assert files == sorted(files)
    # nothing outside the package, and nothing the module never imports
    assert all(f.startswith("components/") for f in files)
    assert "components/training/grpo.py" not in files


def test_relative_imports_submodules_and_declared_code_deps_are_followed(tmp_path: Path) -> None:
    pkg = tmp_path / "components"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text(
        'from . import y\n__code_deps__ = ("components.a.script",)\n\n'
        "def f():\n    from components.a import z\n    return z\n"
    )
    (pkg / "a" / "script.py").write_text("")  # run as a child process's script, never imported
    (pkg / "a" / "y.py").write_text("import json\n")
    (pkg / "a" / "z.py").write_text("")
    (pkg / "a" / "unused.py").write_text("")
    assert code_files(["components.a.x"], tmp_path) == [
        "components/__init__.py",
        "components/a/__init__.py",
        "components/a/script.py",
        "components/a/x.py",
        "components/a/y.py",
        "components/a/z.py",
    ]


def test_the_digest_changes_with_a_file_in_the_closure_only(tmp_path: Path) -> None:
    shutil.copytree(
        SOURCE_ROOT / "components", tmp_path / "components", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    roots = ["components.graph.sources.demo"]
    before = code_digest(roots, tmp_path)
    assert before == code_digest(roots) and code_files(roots, tmp_path) == code_files(roots)
    outside = tmp_path / "components" / "training" / "grpo.py"
    outside.write_text(outside.read_text() + "\n# not imported by the generator\n")
    assert code_digest(roots, tmp_path) == before
    inside = tmp_path / "components" / "graph" / "sources" / "_common.py"
    inside.write_text(inside.read_text() + "\n# a changed helper of the generator\n")
    assert code_digest(roots, tmp_path) != before


def test_an_unknown_root_module_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a module"):
        code_files(["components.no_such_module"])
