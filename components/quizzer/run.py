"""Running the quizzers for one graph snapshot: config, run, Parquet I/O and a summary.

:data:`QA_CANDIDATES` is the ``qa_candidates`` layer (:func:`build_qa_candidates`, what the
asset materializes); ``graphdojo quiz`` calls :func:`run_quiz`, the same run, and writes JSONL.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from components.options import checked_options
from components.quizzer.candidate import QACandidate
from components.quizzer.llm_quizzer import LLMQuizzer, LLMQuizzerConfig
from components.quizzer.noisy import NoiseConfig
from components.quizzer.template import TemplateQuizzer
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import write_parquet

__all__ = [
    "QA_CANDIDATES",
    "QuizConfig",
    "QuizRun",
    "TqdmProgress",
    "build_qa_candidates",
    "model_identity",
    "read_candidates",
    "run_quiz",
    "summarize",
    "write_candidates",
]

Progress = Callable[[str, int, int], None]  # (quizzer kind, done, total)


@dataclass(frozen=True)
class QuizConfig:
    """Which quizzers run and how many candidates each makes (a domain YAML's ``quiz:``).

    ``model``: the LLM Quizzer's model — a registered name (``smollm2-135m``,
    ``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``: :mod:`components.llm.registry`) or a local
    Hugging Face folder; default SmolLM2. ``backend``/``backend_options`` choose the generation
    backend (``transformers`` by default; ``openai`` with ``base_url`` and ``model``; ``vllm`` on a
    GPU). ``llm`` overrides :class:`~components.quizzer.llm_quizzer.LLMQuizzerConfig` fields.
    """

    template_n: int = 60
    llm_n: int = 2
    seed: int = 0
    model: str | None = None
    #: rewrite every template question into fluent English with ``model`` (checked; see
    #: components/quizzer/paraphrase.py)
    paraphrase: bool = False
    #: a noisy pool: shares of the template candidates replaced by faults and changed questions
    #: (:class:`~components.quizzer.noisy.NoiseConfig`; none by default)
    noise: Mapping[str, Any] = field(default_factory=dict)
    #: a clean held-out set: this many more template candidates (seed ``seed + 1``), never made
    #: noisy, never judged, never trained on — the validation and test questions of a noisy pool
    #: (:func:`components.quizzer.noisy.held_out`); none by default
    held_out_n: int = 0
    backend: str = "transformers"
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    llm: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> QuizConfig:
        raw = checked_options(cls, raw, "quiz")
        bad_llm = set(raw.get("llm") or {}) - {f.name for f in fields(LLMQuizzerConfig)}
        if bad_llm:
            raise ValueError(f"unknown llm quizzer options {sorted(bad_llm)}")
        config = cls(**raw)
        config.llm_config()  # its values are checked when the YAML is read, not when the quizzer runs
        config.noise_config()
        if type(config.held_out_n) is not int or config.held_out_n < 0:
            raise ValueError(f"quiz.held_out_n must be a whole number >= 0, not {config.held_out_n!r}")
        return config

    def to_json(self) -> dict[str, Any]:
        out = {**asdict(self), "backend_options": dict(self.backend_options), "llm": dict(self.llm)}
        if self.noise:  # named only when set: a domain without noise keeps its fingerprint
            out["noise"] = dict(self.noise)
        else:
            out.pop("noise")
        if not self.held_out_n:  # likewise: a domain without a held-out set keeps its fingerprint
            out.pop("held_out_n")
        return out

    def noise_config(self) -> NoiseConfig:
        return NoiseConfig(**checked_options(NoiseConfig, self.noise, "quiz.noise"))

    @property
    def needs_model(self) -> bool:
        """Whether a run loads the quizzer's model (LLM episodes or paraphrases)."""
        return self.llm_n > 0 or self.paraphrase or self.noise_config().paraphrase > 0

    def backend_kwargs(self) -> dict[str, Any]:
        """The backend's options, ``model`` as its ``model_dir`` (local backends)."""
        opts = dict(self.backend_options)
        if self.model is not None and self.backend != "openai":
            opts["model_dir"] = self.model
        return opts

    def llm_config(self) -> LLMQuizzerConfig:
        return LLMQuizzerConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in self.llm.items()})


def model_identity(config: QuizConfig) -> dict[str, Any]:
    """What the LLM Quizzer's model *is* (not just its path): a registered model's name, wheels
    and SHA-256, a local folder's config and weight files, an endpoint's URL and model id."""
    from components.llm.registry import model_identity as identity

    if not config.needs_model:
        return {}
    opts = config.backend_kwargs()
    if config.backend == "openai":
        return {"base_url": opts.get("base_url"), "model": opts.get("model")}
    from components.llm.precision import dtype_name

    # the resolved precision too: a bfloat16 and a float32 run of the same model differ
    return {**identity(opts.get("model_dir")), "precision": dtype_name(opts.get("dtype"))}


def _params(config: QuizConfig) -> dict[str, Any]:
    """What identifies a quizzer run: the config, what the LLM Quizzer's model is and, when it
    runs, every LLM Quizzer setting resolved (a changed default is a changed run)."""
    llm = {"llm_resolved": asdict(config.llm_config())} if config.llm_n > 0 else {}
    return {**config.to_json(), "model_identity": model_identity(config), **llm}


@dataclass
class QuizRun:
    candidates: list[QACandidate]
    wall_s: dict[str, float]  # per quizzer kind, model and tool time included
    paraphrase: dict[str, Any] = field(default_factory=dict)  # the paraphrase step's counts
    noise: dict[str, Any] = field(default_factory=dict)  # a noisy pool's composition


def run_quiz(
    db_location: str,
    config: QuizConfig,
    *,
    progress: Progress | None = None,
    snapshot_fingerprint: str | None = None,
) -> QuizRun:
    """Run the configured quizzers on one graph; candidates come back in a fixed order
    (template first, then LLM), every failure recorded on its candidate. Each candidate's
    ``meta["snapshot_fingerprint"]`` names the graph it was made on (computed when not given),
    so certification can detect a changed snapshot. With ``noise`` the template candidates are
    then made into a noisy pool (:mod:`components.quizzer.noisy`); ``held_out_n`` clean template
    candidates come last (:func:`held_out_candidates`)."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend

    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        path = ReadOnlyQueryPath(backend, schema=schema)
        out: list[QACandidate] = []
        wall: dict[str, float] = {}
        if config.template_n > 0:
            t0 = time.perf_counter()
            quizzer = TemplateQuizzer(path, schema, seed=config.seed)
            out += quizzer.generate(config.template_n, _bind(progress, "template"))
            wall["template"] = time.perf_counter() - t0
        paraphrased: dict[str, Any] = {}
        composition: dict[str, Any] = {}
        fingerprint = snapshot_fingerprint or backend.fingerprint()
        llm = None
        if config.needs_model:
            from components.llm import make_backend

            llm = make_backend(config.backend, **config.backend_kwargs())
        try:
            if config.paraphrase:
                from components.quizzer.paraphrase import paraphrase_candidates

                t0 = time.perf_counter()
                paraphrased = paraphrase_candidates([c for c in out if c.quizzer == "template"], llm)
                wall["paraphrase"] = time.perf_counter() - t0
            if config.llm_n > 0:
                t0 = time.perf_counter()
                lq = LLMQuizzer(path, schema, llm, seed=config.seed, config=config.llm_config())
                out += lq.generate(config.llm_n, _bind(progress, "llm"))
                wall["llm"] = time.perf_counter() - t0
            for cand in out:
                cand.meta["snapshot_fingerprint"] = fingerprint
            noise = config.noise_config()
            if noise.active:
                from components.quizzer.noisy import make_noisy

                t0 = time.perf_counter()
                composition = make_noisy(out, noise, schema=schema, query_path=path, fingerprint=fingerprint, llm=llm)
                wall["noise"] = time.perf_counter() - t0
            if config.held_out_n > 0:
                t0 = time.perf_counter()
                out += held_out_candidates(
                    TemplateQuizzer(path, schema, seed=config.seed + 1), config.held_out_n, out, fingerprint, progress
                )
                wall["held_out"] = time.perf_counter() - t0
        finally:
            if llm is not None:
                llm.close()
        return QuizRun(out, wall, paraphrased, composition)
    finally:
        backend.close()


def held_out_candidates(
    quizzer: TemplateQuizzer, n: int, pool: Sequence[QACandidate], fingerprint: str, progress: Progress | None = None
) -> list[QACandidate]:
    """``n`` clean template candidates for evaluation only, labelled ``held_out``
    (:func:`components.quizzer.noisy.held_out`): a question the pool already asks is left out,
    so a held-out question is never also a training question word for word (node overlap is the
    curriculum's to remove)."""
    asked = {c.question for c in pool}
    out = []
    for cand in quizzer.generate(n, _bind(progress, "held-out")):
        if cand.question in asked:
            continue
        asked.add(cand.question)
        cand.meta["snapshot_fingerprint"] = fingerprint
        cand.meta["pool"] = {"source": "held_out", "kind": "template"}
        out.append(cand)
    return out


def _bind(progress: Progress | None, kind: str) -> Callable[[int, int], None] | None:
    return None if progress is None else (lambda done, total: progress(kind, done, total))


def write_candidates(candidates: Iterable[QACandidate], path: str | Path) -> Path:
    """Write Parquet atomically (temp file + rename): a crash never leaves a partial file."""
    return write_parquet((c.to_record() for c in candidates), path)


def read_candidates(path: str | Path) -> list[QACandidate]:
    return [QACandidate.from_record(r) for r in pq.read_table(path).to_pylist()]


def summarize(candidates: Iterable[QACandidate], wall_s: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Counts for metadata: by quizzer kind, by requested axes, failure reasons, and the LLM
    Quizzer's generated tokens per second of wall time (tool time included)."""
    cands = list(candidates)
    wall_s = dict(wall_s or {})
    by_kind: dict[str, Counter[str]] = {}
    axes: dict[str, Counter[str]] = {}
    failures: Counter[str] = Counter()
    tokens = 0
    for c in cands:
        by_kind.setdefault(c.quizzer, Counter())["ok" if c.ok else "failed"] += 1
        for k, v in (c.axes or {}).items():
            axes.setdefault(k, Counter())[str(v)] += 1
        if not c.ok:
            failures[c.failure_reason or "unknown"] += 1
        if c.quizzer == "llm":
            tokens += c.completion_tokens or 0
    return {
        "total": len(cands),
        "ok": sum(1 for c in cands if c.ok),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "by_axes": {k: dict(sorted(v.items())) for k, v in sorted(axes.items())},
        "failure_reasons": dict(failures.most_common()),
        "llm_completion_tokens": int(tokens),
        "wall_s": {k: round(v, 2) for k, v in wall_s.items()},
        "llm_tokens_per_s": round(tokens / wall_s["llm"], 2) if wall_s.get("llm") else None,
    }


def build_qa_candidates(
    inputs: Mapping[str, Artifact], config: QuizConfig, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``qa_candidates`` layer: the configured quizzers on the ``snapshot`` input, every
    candidate (failed ones too) in ``candidates.parquet``; the summary is :func:`summarize`."""
    snap = inputs["snapshot"]
    bars = TqdmProgress(f"{ctx.domain} quizzing")
    try:
        run = run_quiz(str(snap.path), config, progress=bars, snapshot_fingerprint=snap.fingerprint)
    finally:
        bars.close()
    path = write_candidates(run.candidates, out_dir / "candidates.parquet")
    summary = summarize(run.candidates, run.wall_s)
    if config.paraphrase:
        summary["paraphrase"] = run.paraphrase
    if run.noise:
        summary["noise"] = run.noise
    return QA_CANDIDATES.artifact(
        inputs, config, ctx, path=path, summary=summary, counts={"candidates": summary["total"], "ok": summary["ok"]}
    )


QA_CANDIDATES = Layer("qa_candidates", build_qa_candidates, _params)


class TqdmProgress:
    """A ``(kind, done, total)`` progress callback drawing one bar per kind — quizzer kind, or
    certification stage — on a terminal."""

    def __init__(self, desc: str = "quizzing") -> None:
        self.desc = desc
        self._bars: dict[str, Any] = {}

    def __call__(self, kind: str, done: int, total: int) -> None:
        from tqdm.auto import tqdm

        bar = self._bars.get(kind)
        if bar is None:
            bar = self._bars[kind] = tqdm(
                total=total, desc=f"{self.desc} ({kind})", unit="cand", disable=None, leave=False
            )
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
