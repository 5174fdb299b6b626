"""Artifacts and the one way every layer makes them.

Each layer of the pipeline is a :class:`Layer`: a name, a *builder* — a pure function
``build(inputs, config, out_dir, ctx) -> Artifact`` that reads its upstream artifacts and writes
its own files into ``out_dir`` — and the part of its config that identifies what it builds.
:func:`materialize` is the only code that stores artifacts:

1. the fingerprint is computed first, in one place (:meth:`Layer.fingerprint`): the parents'
   fingerprints, the layer's code digest (:mod:`components.store.digest`) and its config;
2. an artifact already recorded under that fingerprint, whose files exist, is reused as is;
3. otherwise the builder writes into a staging folder that becomes
   ``<data_root>/<layer>/<domain>/<fingerprint>/`` with one rename once it is complete
   (:mod:`components.store.atomic`), and only then is the catalog row recorded;
4. launched as several processes (a multi-process trainer), only the main one lands and records
   (:mod:`components.store.ranks`).

A content-addressed layer (the graph snapshot, whose fingerprint is that of the imported graph)
cannot know its fingerprint before building: it is built into staging and lands under the
fingerprint it reports, reusing an identical earlier build.

No Dagster here: the Dagster layer calls :func:`materialize` and turns an :class:`Artifact` into
metadata; the CLI and the tests call the builders directly.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from components.store.atomic import land, make_dirs, new_staging_dir
from components.store.catalog import ArtifactRecord, Catalog
from components.store.digest import code_digest
from components.store.fingerprint import chain_fingerprint
from components.store.ranks import from_main, is_main_process, wait_for_main

__all__ = ["Artifact", "BuildContext", "Builder", "Layer", "MissingArtifactError", "materialize"]


class MissingArtifactError(LookupError):
    """An artifact named by lineage is not in the store (another data root, or deleted)."""


@dataclass(frozen=True)
class Artifact:
    """One stored result of a layer: where it is (a file or a folder; ``None`` when the layer
    decided there was nothing to store), what it was made from, and a JSON-able summary that
    becomes its catalog metadata and its Dagster metadata."""

    layer: str
    domain: str
    fingerprint: str
    path: str | None
    parents: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    reused: bool = False

    def file(self, name: str) -> Path:
        """``name`` inside the artifact's folder (or next to its file)."""
        if self.path is None:
            raise MissingArtifactError(f"{self.domain}/{self.layer} {self.fingerprint} stored nothing")
        base = Path(self.path)
        return (base if base.is_dir() else base.parent) / name

    def to_record(self) -> ArtifactRecord:
        return ArtifactRecord(
            asset=self.layer,
            domain=self.domain,
            fingerprint=self.fingerprint,
            parents=self.parents,
            config=self.config,
            row_counts=self.counts,
            path=self.path,
            metadata=self.summary,
        )

    @classmethod
    def from_record(cls, rec: ArtifactRecord, *, reused: bool = True) -> Artifact:
        return cls(
            layer=rec.asset,
            domain=rec.domain,
            fingerprint=rec.fingerprint,
            path=rec.path,
            parents=tuple(rec.parents),
            config=dict(rec.config),
            counts=dict(rec.row_counts),
            summary=dict(rec.metadata),
            reused=reused,
        )


def _quiet(message: str) -> None:
    del message


@dataclass(frozen=True)
class BuildContext:
    """What a builder may know beyond its inputs and config: its domain, the data root (model
    caches live there), where to log, the layer's own previous artifact (for incremental
    builds; ``None`` when there is none) and the fingerprint it is building."""

    domain: str
    data_root: Path
    log: Callable[[str], None] = _quiet
    previous: Artifact | None = None
    fingerprint: str | None = None  # set by :func:`materialize`: computed once, before the build


class Builder(Protocol):
    def __call__(self, inputs: Mapping[str, Artifact], config: Any, out_dir: Path, ctx: BuildContext) -> Artifact: ...


@dataclass(frozen=True)
class Layer:
    """A layer: ``name`` (its catalog asset name), its ``build`` function, ``params(config)`` —
    the JSON-able config that identifies its output (recorded and fingerprinted) — the data
    folder its artifacts live in (``<data_root>/<folder>/<domain>/<fingerprint>``; default
    ``name``) and the modules whose code it runs (default: the builder's module)."""

    name: str
    build: Builder
    params: Callable[[Any], Mapping[str, Any]]
    content_addressed: bool = False
    folder: str | None = None
    code: tuple[str, ...] | None = None

    @property
    def code_modules(self) -> tuple[str, ...]:
        return self.code or (self.build.__module__,)

    @property
    def code_version(self) -> str:
        """The digest of every ``components`` file the builder runs (Dagster's ``code_version``)."""
        return code_digest(self.code_modules)

    def fingerprint(self, inputs: Mapping[str, Artifact], config: Any) -> str:
        """The one fingerprint rule: parents (in input-name order) + code digest + config."""
        return chain_fingerprint(
            [inputs[k].fingerprint for k in sorted(inputs)], f"{self.name}:{self.code_version}", self.params(config)
        )

    def artifact(
        self,
        inputs: Mapping[str, Artifact],
        config: Any,
        ctx: BuildContext,
        *,
        path: str | Path | None,
        counts: Mapping[str, int] | None = None,
        summary: Mapping[str, Any] | None = None,
        fingerprint: str | None = None,
    ) -> Artifact:
        """What a builder returns: its ``path`` (inside ``out_dir``), counts and summary; the
        fingerprint is :meth:`fingerprint` unless the layer is content-addressed."""
        if self.content_addressed != (fingerprint is not None):
            raise ValueError(f"{self.name}: a content-addressed layer (only) reports its own fingerprint")
        return Artifact(
            layer=self.name,
            domain=ctx.domain,
            fingerprint=fingerprint or ctx.fingerprint or self.fingerprint(inputs, config),
            path=None if path is None else str(path),
            parents=tuple(inputs[k].fingerprint for k in sorted(inputs)),
            config=dict(self.params(config)),
            counts=dict(counts or {}),
            summary=dict(summary or {}),
        )


def _stored(rec: ArtifactRecord | None) -> bool:
    return rec is not None and (rec.path is None or "://" in rec.path or Path(rec.path).exists())


def _land(staging: Path, final: Path, art: Artifact, content_addressed: bool) -> Artifact:
    """Move the built folder ``staging`` to ``final`` with one rename and point ``art`` there.
    An artifact stored outside ``staging`` (nothing, or a database URI) leaves nothing to move;
    a content-addressed one that already landed is that identical earlier build."""
    if art.path is None or not Path(art.path).resolve().is_relative_to(staging.resolve()):
        shutil.rmtree(staging, ignore_errors=True)
        return art
    rel = Path(art.path).resolve().relative_to(staging.resolve())
    if final.exists() and content_addressed:
        shutil.rmtree(staging, ignore_errors=True)
    else:  # an existing folder here has no catalog row (a run stopped between landing and recording)
        land(staging, final)
    return replace(art, path=str(final / rel))


def materialize(
    layer: Layer, inputs: Mapping[str, Artifact], config: Any, ctx: BuildContext, catalog: Catalog | None = None
) -> Artifact:
    """The artifact of ``layer`` for ``inputs`` and ``config``: reused when the catalog under
    ``ctx.data_root`` already records one with its fingerprint (and its files exist), else built
    out of sight, moved into place whole, and recorded. A failing build leaves nothing behind.

    Launched as several processes (:mod:`components.store.ranks`: a multi-process trainer),
    every process builds (training needs all of them) and follows the main process's reuse
    decision, but only the main process lands and records; the others discard their build, wait
    for it and return its catalog row."""
    catalog = catalog or Catalog(ctx.data_root / "catalog.duckdb")
    folder = make_dirs(ctx.data_root / (layer.folder or layer.name) / ctx.domain)
    main = is_main_process()
    if not layer.content_addressed:
        fingerprint = layer.fingerprint(inputs, config)
        rec = catalog.get(layer.name, ctx.domain, fingerprint)
        if from_main(_stored(rec)):
            ctx.log(f"{ctx.domain}/{layer.name}: reusing {fingerprint}")
            return Artifact.from_record(rec or catalog.get(layer.name, ctx.domain, fingerprint))  # type: ignore[arg-type]
    staging = new_staging_dir(folder, "build")
    try:
        # the fingerprint is the one computed above, even if a source file changes during the build
        art = layer.build(
            inputs, config, staging, ctx if layer.content_addressed else replace(ctx, fingerprint=fingerprint)
        )
        if main:
            art = _land(staging, folder / art.fingerprint, art, layer.content_addressed)
        else:
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if main:
        catalog.record(art.to_record())
    wait_for_main()
    if not main:
        rec = catalog.get(layer.name, ctx.domain, art.fingerprint)
        if not _stored(rec):
            raise RuntimeError(f"{ctx.domain}/{layer.name}: the main process recorded no artifact {art.fingerprint}")
        art = Artifact.from_record(rec, reused=False)  # type: ignore[arg-type]
    return art
