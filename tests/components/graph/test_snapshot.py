"""The cheap source fingerprint the sensor compares: a generator source changes with the
generator's code, not only with its parameters."""

from __future__ import annotations

import pytest

from components.graph import snapshot
from components.graph.snapshot import SourceSpec, source_fingerprint
from components.store.digest import code_digest, code_files

SPEC = SourceSpec("generator", "academic", {"seed": 0, "scale": 200})


def test_generator_fingerprint_depends_on_the_generator_code_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "_generator_code_digest", lambda: "code-a")
    a = source_fingerprint(SPEC)
    assert source_fingerprint(SPEC) == a  # same code, same parameters: same fingerprint
    monkeypatch.setattr(snapshot, "_generator_code_digest", lambda: "code-b")
    b = source_fingerprint(SPEC)
    assert b != a
    assert source_fingerprint(SourceSpec("generator", "academic", {"seed": 1, "scale": 200})) != b


def test_generator_code_is_the_generator_module_and_what_it_imports() -> None:
    files = code_files([snapshot.GENERATOR_MODULE])
    assert {"components/graph/sources/demo.py", "components/graph/sources/_common.py"} <= set(files)
    assert snapshot._generator_code_digest() == code_digest([snapshot.GENERATOR_MODULE])


def test_real_generator_fingerprint_is_stable_and_parameterised() -> None:
    assert source_fingerprint(SPEC) == source_fingerprint(SPEC)
    assert source_fingerprint(SPEC) != source_fingerprint(SourceSpec("generator", "academic", {"seed": 1}))
