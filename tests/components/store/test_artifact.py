"""The one way layers make artifacts: fingerprint first, reuse, staging, atomic landing, the
catalog row last — on the real catalog and file system, with small real builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.store.artifact import Artifact, BuildContext, Layer, materialize
from components.store.catalog import Catalog
from components.store.digest import code_digest
from components.store.fingerprint import chain_fingerprint

CALLS: list[str] = []


def build_words(inputs, config, out_dir: Path, ctx: BuildContext) -> Artifact:
    """A layer that writes its config's words (and fails on 'boom' after writing a file)."""
    CALLS.append(config["text"])
    (out_dir / "words.json").write_text(json.dumps(config["text"].split()))
    if config["text"] == "boom":
        raise ValueError("nothing to build on")
    return WORDS.artifact(
        inputs,
        config,
        ctx,
        path=out_dir / "words.json",
        counts={"words": len(config["text"].split())},
        summary={"first": config["text"].split()[0]},
    )


def build_content(inputs, config, out_dir: Path, ctx: BuildContext) -> Artifact:
    """A content-addressed layer: the fingerprint is that of what it built."""
    CALLS.append(config["text"])
    (out_dir / "data.txt").write_text(config["text"])
    return CONTENT.artifact(inputs, config, ctx, path=out_dir, fingerprint=f"c{len(config['text']):031d}")


def build_nothing(inputs, config, out_dir: Path, ctx: BuildContext) -> Artifact:
    """A layer that decides there is nothing to store (a stage with nothing to train on)."""
    return NOTHING.artifact(inputs, config, ctx, path=None, summary={"trained": False})


CODE = ("components.store.fingerprint",)  # the builders here live outside the package
WORDS = Layer("words", build_words, lambda c: dict(c), code=CODE)
CONTENT = Layer("content", build_content, lambda c: dict(c), content_addressed=True, folder="contents", code=CODE)
NOTHING = Layer("nothing", build_nothing, lambda c: {}, code=CODE)


@pytest.fixture()
def ctx(tmp_path: Path) -> BuildContext:
    CALLS.clear()
    return BuildContext(domain="d", data_root=tmp_path)


def _parent(fp: str) -> Artifact:
    return Artifact(layer="up", domain="d", fingerprint=fp, path=None)


def test_the_fingerprint_is_parents_code_digest_and_config(ctx: BuildContext) -> None:
    inputs = {"b": _parent("p2"), "a": _parent("p1")}
    fp = WORDS.fingerprint(inputs, {"text": "x"})
    assert fp == chain_fingerprint(["p1", "p2"], f"words:{code_digest(CODE)}", {"text": "x"})
    assert WORDS.code_version == code_digest(CODE)
    assert fp != WORDS.fingerprint({"a": _parent("p1")}, {"text": "x"}) != WORDS.fingerprint(inputs, {"text": "y"})


def test_materialize_builds_lands_records_and_then_reuses(ctx: BuildContext) -> None:
    first = materialize(WORDS, {"up": _parent("p")}, {"text": "hello world"}, ctx)
    fp = WORDS.fingerprint({"up": _parent("p")}, {"text": "hello world"})
    assert first.fingerprint == fp and not first.reused and first.parents == ("p",)
    assert first.path == str(ctx.data_root / "words" / "d" / fp / "words.json")
    assert json.loads(Path(first.path).read_text()) == ["hello", "world"]
    rec = Catalog(ctx.data_root / "catalog.duckdb").get("words", "d", fp)
    assert rec is not None and rec.path == first.path and rec.row_counts == {"words": 2}
    assert rec.metadata == {"first": "hello"} and rec.config == {"text": "hello world"}
    again = materialize(WORDS, {"up": _parent("p")}, {"text": "hello world"}, ctx)
    assert CALLS == ["hello world"] and again.reused and again.path == first.path and again.summary == first.summary
    assert [p.name for p in (ctx.data_root / "words" / "d").iterdir()] == [fp]  # no staging left


def test_a_recorded_artifact_whose_files_are_gone_is_built_again(ctx: BuildContext) -> None:
    first = materialize(WORDS, {}, {"text": "a b"}, ctx)
    Path(first.path).unlink()
    Path(first.path).parent.rmdir()
    second = materialize(WORDS, {}, {"text": "a b"}, ctx)
    assert CALLS == ["a b", "a b"] and not second.reused and Path(second.path).is_file()


def test_a_failing_build_leaves_no_folder_and_no_row(ctx: BuildContext) -> None:
    with pytest.raises(ValueError, match="nothing to build on"):
        materialize(WORDS, {}, {"text": "boom"}, ctx)
    assert list((ctx.data_root / "words" / "d").iterdir()) == []
    assert Catalog(ctx.data_root / "catalog.duckdb").history("words", "d") == []


def test_a_content_addressed_layer_lands_under_its_own_fingerprint_once(ctx: BuildContext) -> None:
    a = materialize(CONTENT, {}, {"text": "abc"}, ctx)
    assert a.fingerprint == "c" + "3".zfill(31) and a.path == str(ctx.data_root / "contents" / "d" / a.fingerprint)
    b = materialize(CONTENT, {}, {"text": "xyz"}, ctx)  # same length: the same content fingerprint
    assert CALLS == ["abc", "xyz"] and b.path == a.path
    assert (Path(a.path) / "data.txt").read_text() == "abc"  # the identical earlier build is kept
    assert [p.name for p in (ctx.data_root / "contents" / "d").iterdir()] == [a.fingerprint]


def test_a_builder_must_report_its_fingerprint_only_when_content_addressed(ctx: BuildContext) -> None:
    with pytest.raises(ValueError, match="content-addressed"):
        WORDS.artifact({}, {"text": "x"}, ctx, path=None, fingerprint="f" * 32)
    with pytest.raises(ValueError, match="content-addressed"):
        CONTENT.artifact({}, {"text": "x"}, ctx, path=None)


def test_an_artifact_storing_nothing_is_recorded_and_reused(ctx: BuildContext) -> None:
    art = materialize(NOTHING, {}, None, ctx)
    assert art.path is None and art.summary == {"trained": False}
    assert list((ctx.data_root / "nothing" / "d").iterdir()) == []
    assert materialize(NOTHING, {}, None, ctx).reused


def test_the_fingerprint_is_computed_once_even_if_the_code_changes_during_the_build(
    ctx: BuildContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import components.store.artifact as artifact

    digests = iter(["code-before", "code-edited-meanwhile"])
    monkeypatch.setattr(artifact, "code_digest", lambda modules: next(digests))
    art = materialize(WORDS, {}, {"text": "a b"}, ctx)
    assert art.fingerprint == chain_fingerprint([], "words:code-before", {"text": "a b"})
    assert Catalog(ctx.data_root / "catalog.duckdb").get("words", "d", art.fingerprint) is not None
