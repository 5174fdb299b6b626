"""One evaluation: every system on the same questions, seeds and judge → a report dict.

:func:`evaluate_systems` runs each :class:`SystemSpec` on the rows (in the given, recorded
order), judges every answer with one local :class:`~components.evaluation.agents.LLMJudge`, and
summarises per system (:func:`~components.evaluation.metrics.summarize`) with breakdowns by
difficulty level and question type. A system whose checkpoint was not trained (e.g. DPO without
preference pairs) is listed with its reason and no numbers — never silently replaced by another
model.

System kinds:

* ``python_cypher`` — the model in the Python + Cypher sandbox (GraphCert's tool; the trained
  checkpoints' environment, and the base model's "before training" row);
* ``graph_cot`` — zero-shot Graph-CoT prompting (its function API and prompt, no examples);
* ``graphrag`` — the 2-hop neighbourhood of retrieved entities linearised into one prompt.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

from components.evaluation.agents import (
    EvalConfig,
    LLMJudge,
    answer_prior_records,
    closed_book_records,
    graphrag_records,
    tool_agent_records,
)
from components.evaluation.metrics import BREAKDOWNS, SECTIONS, EvalRecord, breakdown, paired_difference, summarize
from components.llm.precision import resolve_precision
from components.store.artifact import Artifact, BuildContext, Layer
from components.training.ablations import ablation_pairs
from components.training.checkpoint import TrainConfig

__all__ = [
    "EVAL_REPORTS",
    "KINDS",
    "NORMALISATION",
    "EvalPlan",
    "SystemSpec",
    "ablation_systems",
    "build_eval_reports",
    "dancer_systems",
    "eval_systems",
    "evaluate_systems",
    "judge_dir",
    "report_summary",
]

KINDS: Final = ("python_cypher", "graph_cot", "graphrag", "closed_book", "answer_prior")
NORMALISATION: Final = (
    "answers scored by type (components/rubric/metrics.py): yes/no/true/false as booleans; numbers "
    "parsed as numbers (integers exact, other numbers within 0.1 % or equal at the gold's decimals); "
    "sets as sets of normalised members; entities SQuAD-normalised; raw EM compares strings as given"
)
#: bumped when scoring, rows or sections change what a report holds (a new report, not a reused one)
SCORING_VERSION: Final = 2
#: what the "answer prior" row's model_dir says (it has none)
NO_MODEL: Final = "no model"


@dataclass(frozen=True)
class SystemSpec:
    """``name`` as the report shows it; ``model_dir`` ``None`` with ``note`` = not available."""

    name: str
    kind: str
    model_dir: str | None
    method: str = ""
    note: str = ""
    system_prompt: str | None = None  # e.g. worked examples (the few-shot baseline)
    #: trained by a ``mechanics_only`` stage: answers ``mechanics_questions`` questions once
    mechanics: bool = False
    #: another system of the same report whose answers this row reuses (the same checkpoint
    #: under a second name, e.g. the NoDPO ablation = stage 1): nothing is sampled twice
    same_as: str | None = None
    #: the turn budget of this system's episodes (None: ``eval.max_turns``): GraphDancer in the
    #: Graph-CoT environment is evaluated with the turns it trained with
    max_turns: int | None = None
    #: the report sections this system answers (an expensive off-the-shelf row may skip "external")
    sections: tuple[str, ...] = SECTIONS
    #: a model a user could pick instead of training one (the best such row is the paired baseline)
    offshelf: bool = False
    #: the training seed of this checkpoint: specs sharing a name with different seeds are one row
    #: whose CIs resample seeds, then questions (components/evaluation/metrics.py)
    train_seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown system kind {self.kind!r}; known: {KINDS}")


def _run_system(
    spec: SystemSpec, rows: Sequence[Mapping[str, Any]], db_location: str, config: EvalConfig, graph: dict[str, Any]
) -> list[EvalRecord]:
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout.runner import CODE_STOPS, STOPS
    from components.tools.cot_env import GraphCoTEnvironment
    from components.tools.episodes import python_cypher_envs

    if spec.kind == "answer_prior":
        return answer_prior_records(rows, graph.get("train_rows") or [], config, system=spec.name)
    llm = TransformersBackend(spec.model_dir, threads=config.threads, dtype=config.precision)
    try:
        if spec.kind == "closed_book":
            return closed_book_records(llm, rows, config, system=spec.name)
        if spec.kind == "python_cypher":
            with python_cypher_envs(db_location, max_rounds=max(1, config.max_turns - 1)) as make_env:
                return tool_agent_records(
                    spec.name, llm, make_env, rows, config, stops=CODE_STOPS, system_prompt=spec.system_prompt
                )
        api = graph["api"]()
        if spec.kind == "graph_cot":
            return tool_agent_records(
                spec.name,
                llm,
                lambda: GraphCoTEnvironment(api, max_rounds=max(1, config.max_turns - 1)),
                rows,
                config,
                stops=STOPS,
            )
        return graphrag_records(llm, api, rows, config, system=spec.name)
    finally:
        llm.close()


def evaluate_systems(
    systems: Sequence[SystemSpec],
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: EvalConfig,
    *,
    judge_model_dir: str | None,
    progress: Any = None,
    pairs: Sequence[tuple[str, str]] = (),
    ood_rows: Sequence[Mapping[str, Any]] = (),
    external_rows: Sequence[Mapping[str, Any]] = (),
    train_rows: Sequence[Mapping[str, Any]] = (),
    record_cache: str | Path | None = None,
) -> dict[str, Any]:
    """The report dict (see the module docstring): ``systems`` (summary + breakdowns per system,
    or ``available: False`` with the note), ``records`` (every per-question record), the fixed
    question order, seeds, decoding, judge model and normalisation; ``paired`` — for each
    ``(a, b)`` of ``pairs`` that both ran, EM and F1 of ``a`` minus ``b`` on the same questions
    with paired-bootstrap CIs (:func:`~components.evaluation.metrics.paired_difference`).
    ``ood_rows`` (:mod:`components.evaluation.ood`) are answered by every fully trained system
    too and summarised apart (``systems[name]["ood"]``, ``ood``), never in the main table.

    ``rows`` are the **test** section; ``external_rows`` (the domain's externally written
    questions, gold answers resolved) the **external** section: each system answers both in one
    batch (unless its ``sections`` leave one out), each section is summarised on its own
    (``systems[name]["sections"][section]``: summary and breakdowns by answer type, template
    family and level; ``summary`` / ``by_*`` repeat the test section), and every pair is
    differenced per section on EM, EM on non-boolean questions, grounded EM and F1, beside the
    pairs each trained system makes with the answer prior and the best off-the-shelf row
    (:func:`baseline_pairs`). ``train_rows`` (the training split: answer, answer type, family)
    feed the answer prior.

    ``record_cache`` (a folder): each system's records are stored there under a key of
    everything that decides them (:func:`records_key`: the system, its model's identity, the
    questions, the decoding config, the graph, the evaluation code's digest) and reused when the
    key matches — so an interrupted evaluation resumes, and a report that adds a row or a
    training seed does not answer the other rows' questions again."""
    from components.graph import open_backend
    from components.llm.transformers_backend import TransformersBackend
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    rows = [{**r, "section": "test"} for r in list(rows)[: config.max_questions]]
    external = [{**r, "section": "external", "family": "external"} for r in external_rows]
    if not rows and not external:
        raise ValueError("no evaluation questions")
    backend = open_backend(db_location)
    cache: dict[str, Any] = {}

    def api() -> Any:  # built once, only when a system needs the Graph-CoT API / retriever
        if "api" not in cache:
            index = NodeIndex.open(backend, shared_embedder(threads=config.threads), progress=False)
            cache["api"] = GraphCoT(backend, index=index)
        return cache["api"]

    records: list[EvalRecord] = []
    ood_records: list[EvalRecord] = []
    out_systems: dict[str, Any] = {}
    wall: dict[str, float] = {}
    cached: set[str] = set()  # systems whose records came from record_cache
    try:
        for spec in systems:
            if spec.model_dir is None:
                continue
            if spec.same_as:
                wall[spec.name] = 0.0
                continue
            t0 = time.perf_counter()
            mine = [r for r in rows + external if r["section"] in spec.sections]
            subset, own = (
                (mine[: config.mechanics_questions], replace(config, samples=1)) if spec.mechanics else (mine, config)
            )
            if spec.max_turns:
                own = replace(own, max_turns=spec.max_turns)
            key = records_key(spec, subset, own, db_location, [] if spec.mechanics else ood_rows, train_rows)
            stored = _cached_records(record_cache, key)
            if stored is None:
                recs = _run_system(spec, subset, db_location, own, {"api": api, "train_rows": train_rows})
                ood = (
                    _run_system(spec, list(ood_rows), db_location, own, {"api": api})
                    if ood_rows and not spec.mechanics
                    else []
                )
                _store_records(record_cache, key, recs, ood)
            else:
                recs, ood = stored
                cached.add(spec.name)
            ood_records += ood
            for r in recs:
                r.train_seed = spec.train_seed
            wall[spec.name] = wall.get(spec.name, 0.0) + time.perf_counter() - t0
            records += recs
            if progress is not None:
                progress(spec.name, wall[spec.name])
    finally:
        backend.close()
    judge_model = "off"
    if config.judge:
        judge_llm = TransformersBackend(judge_model_dir, threads=config.threads, dtype=config.precision)
        try:
            judge = LLMJudge(judge_llm)
            judge.judge(records + ood_records)
            judge_model = judge.model_name
        finally:
            judge_llm.close()
    for spec in systems:  # rows that reuse another row's (judged) answers
        if spec.same_as and spec.model_dir is not None:
            records += [replace(r, system=spec.name) for r in records if r.system == spec.same_as]
            ood_records += [replace(r, system=spec.name) for r in ood_records if r.system == spec.same_as]
    for spec in systems:  # in the given order
        if spec.name in out_systems:  # another training seed of a row already summarised
            continue
        if spec.same_as and not any(r.system == spec.name for r in records):
            spec = replace(spec, model_dir=None, note=f"reuses the answers of {spec.same_as}, which was not evaluated")
        if spec.model_dir is None:
            out_systems[spec.name] = {"available": False, "note": spec.note, "kind": spec.kind, "method": spec.method}
            continue
        recs = [r for r in records if r.system == spec.name]
        sections = {sec: _section_summary([r for r in recs if r.section == sec]) for sec in SECTIONS}
        sections = {k: v for k, v in sections.items() if v}
        test = sections.get("test") or next(iter(sections.values()), {})
        out_systems[spec.name] = {
            "available": True,
            "kind": spec.kind,
            "method": spec.method,
            "model": spec.model_dir,
            "note": spec.note,
            "offshelf": spec.offshelf,
            "train_seeds": sorted({s.train_seed for s in systems if s.name == spec.name}),
            **test,
            "sections": sections,
            "wall_s": wall[spec.name],
            "cached": spec.name in cached,
        }
        ood = [r for r in ood_records if r.system == spec.name]
        if ood:
            out_systems[spec.name]["ood"] = {"summary": summarize(ood), "by_kind": breakdown(ood, "qtype")}
    by_system = {name: [r for r in records if r.system == name] for name in out_systems}
    baselines = baseline_pairs(systems, out_systems)
    all_pairs = list(dict.fromkeys([*pairs, *baselines]))
    paired = []
    for sec in SECTIONS:
        for a, b in all_pairs:
            ra = [r for r in by_system.get(a) or [] if r.section == sec]
            rb = [r for r in by_system.get(b) or [] if r.section == sec]
            if ra and rb:
                paired.append(
                    {
                        "a": a,
                        "b": b,
                        "section": sec,
                        "baseline": (a, b) in baselines,
                        **{m: paired_difference(ra, rb, m) for m in PAIRED_METRICS},
                    }
                )
    return {
        "systems": out_systems,
        "paired": paired,
        "order": [str(r.get("id")) for r in rows],
        "external_order": [str(r.get("id")) for r in external],
        "seeds": list(config.seeds),  # sample indices (streams of the run seeded by decoding.seed)
        "decoding": {**asdict(config), "precision": resolve_precision(config.precision)},
        "judge_model": judge_model,
        "normalisation": NORMALISATION,
        "records": [r.to_dict() for r in records],
        "ood": {
            "questions": len(ood_rows),
            "rules": sorted({str(r.get("rule")) for r in ood_rows}),
            "records": [r.to_dict() for r in ood_records],
        },
    }


#: the metrics every paired difference states
PAIRED_METRICS: Final = ("em", "em_nonbool", "grounded", "f1")


def records_key(
    spec: SystemSpec,
    rows: Sequence[Mapping[str, Any]],
    config: EvalConfig,
    db_location: str,
    ood_rows: Sequence[Mapping[str, Any]] = (),
    train_rows: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The key of one system's records (:func:`evaluate_systems`' ``record_cache``): the system
    (name, kind, prompt, sections, turns, training seed), its model's identity (a folder: its
    config digest and weight files' sizes and times), every question it answers, the decoding
    config, the graph, the training answers (the answer prior), the scoring version and the
    digest of the evaluation code."""
    import hashlib
    import json

    from components.llm.registry import model_identity

    def question(r: Mapping[str, Any]) -> list[Any]:
        return [r.get(k) for k in ("id", "question", "answer", "answer_type", "section", "family", "level", "qtype")]

    model = None if spec.model_dir in (None, NO_MODEL) else model_identity(spec.model_dir)
    payload = {
        "system": [spec.name, spec.kind, spec.system_prompt, list(spec.sections), spec.max_turns, spec.mechanics],
        "train_seed": spec.train_seed,
        "model": model,
        "rows": [question(r) for r in rows],
        "ood": [question(r) for r in ood_rows],
        "train": [[r.get("answer"), r.get("answer_type"), r.get("family")] for r in train_rows]
        if spec.kind == "answer_prior"
        else [],
        "config": asdict(config),
        "graph": str(db_location),
        "scoring": SCORING_VERSION,
        "code": EVAL_REPORTS.code_version,
    }
    return hashlib.blake2b(json.dumps(payload, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def _cached_records(folder: str | Path | None, key: str) -> tuple[list[EvalRecord], list[EvalRecord]] | None:
    from components.evaluation.metrics import records_from
    from components.store.json_cache import read_cached

    raw = read_cached(folder, key)
    try:
        return None if raw is None else (records_from(raw["records"]), records_from(raw["ood"]))
    except (ValueError, KeyError, TypeError):
        return None  # a broken cache file is recomputed, never trusted


def _store_records(folder: str | Path | None, key: str, recs: Sequence[EvalRecord], ood: Sequence[EvalRecord]) -> None:
    from components.store.json_cache import write_cached

    write_cached(folder, key, {"records": [r.to_dict() for r in recs], "ood": [r.to_dict() for r in ood]})


def _section_summary(recs: Sequence[EvalRecord]) -> dict[str, Any]:
    if not recs:
        return {}
    return {"summary": summarize(recs), **{f"by_{b}": breakdown(recs, b) for b in BREAKDOWNS}}


#: the rows that are trained Solvers (each is compared with the answer prior and the best
#: off-the-shelf row)
TRAINED: Final = (
    "sft-only",
    "graphcert-rft",
    "graphcert-grpo",
    "graphdancer-rl",
    "graphdancer-rl→dpo",
    "graphdancer warm start",
)


def baseline_pairs(systems: Sequence[SystemSpec], out: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(trained, baseline)`` pairs: every trained, fully evaluated system against the answer
    prior and against the best off-the-shelf row (highest test-section EM among rows marked
    ``offshelf``; ties to the first in report order)."""
    evaluated = {s.name for s in systems if out.get(s.name, {}).get("available") and not s.mechanics}
    offshelf = [s.name for s in systems if s.offshelf and s.name in evaluated]
    best = max(offshelf, key=lambda n: out[n]["summary"]["em"] or 0.0, default=None)
    prior = next((s.name for s in systems if s.kind == "answer_prior" and s.name in evaluated), None)
    pairs = []
    for s in systems:
        if s.name in TRAINED and s.name in evaluated:
            pairs += [(s.name, b) for b in (prior, best) if b]
    return pairs


# -- the layer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalPlan:
    """An evaluation layer's config: how to evaluate, and the domain's training config (which
    base model the "before training" rows use)."""

    evaluate: EvalConfig
    train: TrainConfig

    def params(self) -> dict[str, Any]:
        from components.llm.registry import model_identity
        from components.store.fingerprint import hash_path

        judge = model_identity(self.evaluate.judge_model) if self.evaluate.judge else None
        qfile, xfile = self.evaluate.questions, self.evaluate.external
        return {
            "config": vars(self.evaluate),
            "precision": resolve_precision(self.evaluate.precision),  # what "auto" meant on this host
            "train": self.train.resolved(),
            "judge_identity": judge,
            "questions_hash": hash_path(qfile) if qfile and Path(qfile).is_file() else None,
            "scoring": SCORING_VERSION,
            **({"external_hash": hash_path(xfile)} if xfile and Path(xfile).is_file() else {}),
            **({"offshelf": [model_identity(m) for m in self.evaluate.offshelf]} if self.evaluate.offshelf else {}),
        }


def judge_dir(config: EvalConfig, data_root: Path) -> str | None:
    """The judge model's folder: the configured name or folder, else SmolLM2-135M-Instruct;
    None when the judge is off (a named model is then not converted: ≈ 20 s in the demo)."""
    from components.llm.registry import model_folder

    return str(model_folder(config.judge_model, data_root)) if config.judge else None


#: the differences a domain's report states with paired CIs: does the warm start beat the base
#: model given the same worked examples, does RL beat its warm start, does DPO beat stage 1
PAIRS: Final = (
    ("sft-only", "base few-shot"),
    ("sft-only", "base (before training)"),
    ("graphcert-grpo", "sft-only"),
    ("graphcert-rft", "sft-only"),
    ("graphcert-grpo", "graphcert-rft"),  # GRPO continues RFT when RFT trained
    ("graphdancer-rl→dpo", "graphdancer-rl"),
    # GraphDancer in its own environment (train.dancer_env: graph_cot): each stage against the one before
    ("graphdancer warm start", "graph-cot zero-shot"),
    ("graphdancer-rl", "graphdancer warm start"),
)


#: the note of a system trained by a ``mechanics_only`` stage (TrainConfig)
MECHANICS_NOTE: Final = (
    "mechanics only: the tiny random model (cpu-tiny), not a learning result; "
    "evaluated on the first eval.mechanics_questions questions, one sample"
)


def eval_systems(
    inputs: Mapping[str, Artifact],
    base_model: str,
    few_shot: str | None = None,
    *,
    train: TrainConfig | None = None,
    only: Sequence[str] | None = None,
    offshelf: Sequence[tuple[str, str]] = (),
    offshelf_sections: Sequence[str] = SECTIONS,
    baselines: bool = False,
) -> list[SystemSpec]:
    """What a domain's evaluation compares, in report order: the base model four ways (its
    sandbox, with ``few_shot`` worked examples in its prompt, zero-shot Graph-CoT, GraphRAG),
    every trained stage, and each configured ablation. The DPO stage counts only when it was
    trained on the current preference pairs. Stages ``train`` runs on the tiny model carry
    :data:`MECHANICS_NOTE`; with ``only``, every other system is listed as not evaluated.
    ``offshelf``: ``(name, model folder)`` of off-the-shelf models, each a ``"<name> few-shot"``
    row (the same worked examples) answering ``offshelf_sections``; ``baselines``: the answer
    prior and the closed-book SFT Solver lead the list."""
    systems = _all_systems(inputs, base_model, few_shot)
    if few_shot:
        systems = [replace(s, offshelf=True) if s.name == "base few-shot" else s for s in systems]
    extra = offshelf_systems(offshelf, few_shot, offshelf_sections) if few_shot else []
    lead = (
        [
            SystemSpec(
                "answer prior",
                "answer_prior",
                NO_MODEL,
                "no model: the most common training answer per (template family, answer type)",
            ),
            SystemSpec(
                "closed book", "closed_book", str(inputs["checkpoint"].path), "the SFT Solver without tools or graph"
            ),
        ]
        if baselines
        else []
    )
    at = next((i + 1 for i, s in enumerate(systems) if s.name == "base few-shot"), 1)
    systems = lead + systems[:at] + extra + systems[at:]
    if train is not None:
        systems = dancer_systems(systems, inputs, train)
        stage_of = {
            "graphdancer-rl": "graphdancer_rl",
            "graphdancer warm start": "graphdancer_rl",
            "graphdancer-rl→dpo": "graphdancer_dpo",
        }
        systems = [
            replace(s, note=MECHANICS_NOTE, mechanics=True)
            if s.model_dir
            and s.kind != "answer_prior"
            and train.mechanics(stage_of.get(s.name, _ablation_stage(s.name)))
            else s
            for s in systems
        ]
    if only is None:
        return systems
    unknown = set(only) - {s.name for s in systems}
    if unknown:
        raise ValueError(f"eval.systems names unknown systems {sorted(unknown)}; known: {[s.name for s in systems]}")
    return [
        s if s.name in only else replace(s, model_dir=None, note="not evaluated in this domain's config (eval.systems)")
        for s in systems
    ]


def offshelf_systems(
    models: Sequence[tuple[str, str]], few_shot: str | None, sections: Sequence[str] = SECTIONS
) -> list[SystemSpec]:
    """One ``"<name> few-shot"`` row per ``(name, model folder)``: an off-the-shelf model with
    the worked examples ``few_shot``, the same tools and turns as the trained rows."""
    return [
        SystemSpec(
            f"{name} few-shot",
            "python_cypher",
            folder,
            "off the shelf (Q4_K_M weights, dequantized), worked examples in the prompt, the same tools and turns",
            "",
            few_shot,
            sections=tuple(sections),
            offshelf=True,
        )
        for name, folder in models
    ]


def _ablation_stage(name: str) -> str:
    """The training stage an ablation row's checkpoint comes from (for ``mechanics_only``)."""
    if name.startswith("ablation: GraphDancer"):
        return "graphdancer_rl"
    return "ablations" if name.startswith("ablation") else ""


def dancer_systems(systems: list[SystemSpec], inputs: Mapping[str, Artifact], train: TrainConfig) -> list[SystemSpec]:
    """GraphDancer's rows as ``train`` ran them: each method text names the stage-1 algorithm and
    the environment; with ``dancer_env: graph_cot`` the rows play the Graph-CoT API with the
    ``dancer_turns`` budget (the zero-shot Graph-CoT base row too, so each stage is compared in one
    setting), a ``graphdancer warm start`` row joins, and the ablations' rows follow."""
    from components.training.stages import DANCER_WARM_START

    algorithm = "PPO" if train.dancer_stage1 == "ppo" else "GRPO"
    env = train.dancer_environment
    where = "Graph-CoT API" if env == "graph_cot" else "Python + Cypher sandbox"
    turns = int(train.resolved()["dancer_turns"]) if env == "graph_cot" else None
    out: list[SystemSpec] = []
    for s in systems:
        if s.name == "graphdancer-rl":
            if env == "graph_cot":
                warm = Path(str(s.model_dir)) / DANCER_WARM_START
                trained = (warm / "config.json").is_file()
                out.append(
                    SystemSpec(
                        "graphdancer warm start",
                        "graph_cot",
                        str(warm) if trained else None,
                        f"SFT on Graph-CoT teacher trajectories ({where})",
                        "" if trained else "not trained: the stage-1 artifact has no warm start",
                        max_turns=turns,
                    )
                )
            s = replace(s, method=f"GraphDancer stage 1 ({algorithm}, {where})")
        elif s.name == "graphdancer-rl→dpo":
            s = replace(s, method=f"GraphDancer {algorithm} stage 1 → DPO ({where})")
        elif not (env == "graph_cot" and s.name == "graph-cot zero-shot"):
            out.append(s)
            continue
        out.append(replace(s, kind="graph_cot", max_turns=turns) if env == "graph_cot" else s)
    return out + _dancer_ablation_systems(inputs, train, where, turns)


def _dancer_ablation_systems(
    inputs: Mapping[str, Artifact], train: TrainConfig, where: str, turns: int | None
) -> list[SystemSpec]:
    """One row per GraphDancer ablation of the ``dancer_ablations`` input (NoDPO reuses the
    stage-1 row's answers)."""
    art = inputs.get("dancer_ablations")
    if art is None:
        return []
    kind = "graph_cot" if train.dancer_environment == "graph_cot" else "python_cypher"
    out = []
    for a in art.summary.get("ablations") or []:
        name, label = f"ablation: GraphDancer {a['label']}", a["label"]
        if a.get("same_as"):
            out.append(
                SystemSpec(
                    name,
                    kind,
                    str(inputs["dancer_rl"].path),
                    f"{label}: the stage-1 checkpoint ({where})",
                    "",
                    same_as=a["same_as"],
                    max_turns=turns,
                )
            )
            continue
        folder = str(art.file(a["folder"])) if a.get("folder") else None
        what = {"NoPPO": "DPO from the warm start", "NoCurriculum": "uniform sampling in stage 1 and DPO"}[label]
        note = "" if folder else f"not trained: {a.get('reason', 'no checkpoint')}"
        out.append(SystemSpec(name, kind, folder, f"{label}: {what} ({where})", note, max_turns=turns))
    return out


def _rl_row(name: str, art: Artifact, method: str, start: str) -> SystemSpec:
    """The row of an RL stage's checkpoint; when its validation curve kept step 0 (no later point
    was better: the saved weights are its start's), the row says so and reuses the start row's
    answers instead of presenting the start as an RL result."""
    if art.summary.get("chosen_step") == 0 and art.summary.get("validation"):
        what = f"{method}: did not improve its start (best validation point: step 0), so this is {start}"
        return SystemSpec(name, "python_cypher", str(art.path), what, same_as=start)
    step = art.summary.get("chosen_step")
    return SystemSpec(name, "python_cypher", str(art.path), method + ("" if step is None else f" (step {step})"))


def _all_systems(inputs: Mapping[str, Artifact], base_model: str, few_shot: str | None) -> list[SystemSpec]:
    dpo, pairs, ablations, rft = inputs["dancer_dpo"], inputs["pairs"], inputs["ablations"], inputs["rft"]
    dpo_current = dpo.path is not None and pairs.fingerprint in dpo.parents
    fewshot = (
        [SystemSpec("base few-shot", "python_cypher", base_model, "worked examples in the prompt", "", few_shot)]
        if few_shot
        else []
    )
    systems = [
        SystemSpec("base (before training)", "python_cypher", base_model, "no training"),
        *fewshot,
        SystemSpec("graph-cot zero-shot", "graph_cot", base_model, "Graph-CoT prompting, no examples"),
        SystemSpec("graphrag", "graphrag", base_model, "2-hop neighbourhood of retrieved entities in one prompt"),
        SystemSpec("sft-only", "python_cypher", str(inputs["checkpoint"].path), "SFT warm start"),
        SystemSpec(
            "graphcert-rft",
            "python_cypher",
            None if rft.path is None else str(rft.path),
            "certified rejection-sampling fine-tuning",
            "" if rft.path is not None else f"not trained: {rft.summary.get('reason', 'no checkpoint')}",
        ),
        _rl_row(
            "graphcert-grpo", inputs["graphcert"], "GraphCert GRPO", "sft-only" if rft.path is None else "graphcert-rft"
        ),
        SystemSpec("graphdancer-rl", "python_cypher", str(inputs["dancer_rl"].path), "GraphDancer stage 1 (GRPO)"),
        SystemSpec(
            "graphdancer-rl→dpo",
            "python_cypher",
            str(dpo.path) if dpo_current else None,
            "GraphDancer RL → DPO",
            "" if dpo_current else "not trained: no preference pairs for the current stage-1 policy",
        ),
    ]
    return systems + ablation_systems(ablations)


def ablation_systems(ablations: Artifact) -> list[SystemSpec]:
    """One row per configured ablation of an ``ablations`` artifact — per training seed, under
    one name, for an arm trained with several seeds (its CIs then resample seeds)."""
    return [
        SystemSpec(
            f"ablation: {a['name']}",
            "python_cypher",
            str(ablations.file(a["folder"])),
            _ablation_text(a),
            train_seed=int(a["seed"]) if len(a.get("seeds") or ()) > 1 else 0,
        )
        for a in ablations.summary.get("ablations") or []
    ]


def _ablation_text(a: Mapping[str, Any]) -> str:
    """What an ablation row is, from its summary record (older records have no stage: GRPO)."""
    if a.get("stage") == "sft":
        seeds = a.get("seeds") or [a.get("seed")]
        return f"SFT from the base model, data {a['data']} ({a['items']} items), seeds {seeds}"
    return f"GraphCert GRPO, data {a['data']} ({a['items']} items), reward {a['reward']}"


def report_summary(report: Mapping[str, Any], files: Mapping[str, str], out_dir: Path) -> dict[str, Any]:
    """An evaluation artifact's summary: its files (relative to the artifact's folder), the
    side-by-side table, the question count, seeds and judge."""
    from components.evaluation.report import (
        DATA_BY_SOURCE,
        DATA_FUNNEL,
        breakdown_rows,
        data_tables,
        main_table,
        ood_table,
        paired_table,
        relative_files,
    )

    ood, data = report.get("ood") or {}, dict(data_tables(report))
    ext = report.get("external") or {}
    external = (
        {
            "external_systems": main_table(report, "external"),
            "external_paired": paired_table(report, "external"),
            "external_by_answer_type": breakdown_rows(report, "by_answer_type", "external"),
            "external_questions": ext.get("evaluated"),
            "external_outside": {k: ext.get(k) for k in ("questions", "outside", "share", "reasons")},
        }
        if ext.get("evaluated")
        else {}
    )
    return {
        **({"ood": ood_table(report), "ood_questions": ood["questions"]} if ood.get("questions") else {}),
        **external,
        "files": relative_files(files, out_dir),
        "systems": main_table(report),
        "paired": paired_table(report),
        "by_answer_type": breakdown_rows(report, "by_answer_type"),
        "questions": len(report["order"]),
        "questions_source": report.get("questions_source"),
        "questions_skipped": len(report.get("questions_skipped") or []),
        "seeds": list(report["seeds"]),
        "judge_model": report["judge_model"],
        "data_funnel": data.get(DATA_FUNNEL, []),
        "data_by_source": data.get(DATA_BY_SOURCE, []),
    }


def _worked_examples(inputs: Mapping[str, Artifact], config: EvalConfig) -> str | None:
    """The few-shot prompt: the first ``config.few_shot`` teacher trajectories of the training
    split (programs anchored by name, as the warm start learns them), played in the sandbox."""
    from components.tools.episodes import python_cypher_envs
    from components.training.checkpoint import certified_train_rows
    from components.training.teacher import worked_examples

    rows = certified_train_rows(inputs["certified"], inputs["curriculum"], inputs["snapshot"], limit=config.few_shot)
    if not rows:
        return None
    with python_cypher_envs(str(inputs["snapshot"].path), max_rounds=max(1, config.max_turns - 1)) as make_env:
        return worked_examples(rows, make_env)


def evaluation_rows(config: EvalConfig, inputs: Mapping[str, Artifact]) -> tuple[list[dict[str, Any]], list[dict]]:
    """``(rows, skipped)``: the external question file's rows (gold Cypher resolved on the
    snapshot; failed, empty or unscorable queries skipped and listed) when ``eval.questions`` is
    set, else the test split of the curriculum (nothing skipped)."""
    if config.questions:
        from components.evaluation.gold_cypher import load_question_file, resolve_gold

        gold = resolve_gold(load_question_file(config.questions), str(inputs["snapshot"].path))
        return gold.rows, gold.skipped
    from components.evaluation.questions import split_questions

    return split_questions(str(inputs["curriculum"].path), str(inputs["certified"].path)), []


def external_rows(config: EvalConfig, db_location: str) -> tuple[list[dict[str, Any]], list[dict], dict[str, Any]]:
    """``(rows, skipped, outside)`` of ``eval.external``: the scorable questions (gold Cypher
    resolved on the snapshot; :func:`external_subset` of ``external_questions`` when set), the skipped ones with
    their reasons, and how many gold queries lie outside the template families
    (:func:`~components.evaluation.families.outside_report`). Nothing when unset."""
    if not config.external:
        return [], [], {}
    from components.evaluation.families import outside_report
    from components.evaluation.gold_cypher import load_question_file, resolve_gold
    from components.graph import open_backend

    file_rows = load_question_file(config.external)
    gold = resolve_gold(file_rows, db_location)
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
    finally:
        backend.close()
    scorable = {r["id"] for r in gold.rows}
    outside = outside_report([r for r in file_rows if r["id"] in scorable], schema)
    rows = external_subset(gold.rows, config.external_questions)
    outside["evaluated"] = len(rows)
    return rows, gold.skipped, outside


def external_subset(rows: Sequence[Mapping[str, Any]], n: int) -> list[Mapping[str, Any]]:
    """A fixed subset of ``n`` external questions (all when ``n`` is 0): the ones whose ids'
    BLAKE2b hashes sort first, kept in file order — spread over the whole file (a file grouped
    by answer type still gives every type its share), the same on every run, and unchanged for
    a question when others are added or edited.

    >>> [r["id"] for r in external_subset([{"id": f"q{i}"} for i in range(6)], 3)]
    ['q0', 'q3', 'q4']
    """
    if not n or n >= len(rows):
        return list(rows)
    import hashlib

    def key(row: Mapping[str, Any]) -> str:
        return hashlib.blake2b(str(row["id"]).encode(), digest_size=8).hexdigest()

    chosen = {str(r["id"]) for r in sorted(rows, key=key)[:n]}
    return [r for r in rows if str(r["id"]) in chosen]


def ood_evaluation_rows(config: EvalConfig, db_location: str) -> list[dict[str, Any]]:
    """``config.ood_questions`` OOD rows generated on the snapshot (seeded by ``config.seed``)."""
    if not config.ood_questions:
        return []
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.evaluation.ood import ood_questions
    from components.graph import open_backend

    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        return ood_questions(ReadOnlyQueryPath(backend, schema=schema), schema, config.ood_questions, seed=config.seed)
    finally:
        backend.close()


def build_eval_reports(inputs: Mapping[str, Artifact], plan: EvalPlan, out_dir: Path, ctx: BuildContext) -> Artifact:
    """The ``eval_reports`` layer: :func:`evaluate_systems` of :func:`eval_systems` on the test
    split of the ``curriculum`` input, on the ``snapshot`` graph; writes the report files."""
    from components.evaluation.questions import split_questions
    from components.evaluation.report import write_report
    from components.llm.registry import model_folder
    from components.training.checkpoint import base_model_dir

    config, db = plan.evaluate, str(inputs["snapshot"].path)
    rows, skipped = evaluation_rows(config, inputs)
    external, external_skipped, outside = external_rows(config, db)
    few_shot = _worked_examples(inputs, config) if config.few_shot else None
    systems = eval_systems(
        inputs,
        str(base_model_dir(plan.train, ctx.data_root)),
        few_shot,
        train=plan.train,
        only=config.systems,
        offshelf=[(name, str(model_folder(name, ctx.data_root))) for name in config.offshelf],
        offshelf_sections=config.offshelf_sections,
        baselines=config.baselines,
    )
    train_rows = (
        split_questions(str(inputs["curriculum"].path), str(inputs["certified"].path), "train")
        if config.baselines
        else []
    )
    report = evaluate_systems(
        systems,
        rows,
        db,
        config,
        judge_model_dir=judge_dir(config, ctx.data_root),
        progress=lambda name, s: ctx.log(f"{name}: {s:.1f} s"),
        pairs=PAIRS + tuple(ablation_pairs(inputs["ablations"].summary.get("ablations") or [])),
        ood_rows=ood_evaluation_rows(config, db),
        external_rows=external,
        train_rows=train_rows,
        record_cache=ctx.data_root / "eval-cache" / ctx.domain,
    )
    report["questions_source"] = config.questions or "the test split"
    report["questions_skipped"] = skipped + [{**s, "section": "external"} for s in external_skipped]
    report["external"] = (
        {"file": config.external, "skipped": len(external_skipped), **outside} if config.external else {}
    )
    certified = inputs["certified"].summary
    report["data"] = {"funnel": certified.get("funnel") or [], "by_source": certified.get("funnel_by_source") or []}
    files = write_report(report, out_dir, f"graphdojo evaluation — {ctx.domain}")
    return EVAL_REPORTS.artifact(
        inputs,
        plan,
        ctx,
        path=out_dir,
        counts={"records": len(report["records"])},
        summary=report_summary(report, files, out_dir),
    )


EVAL_REPORTS: Final = Layer("eval_reports", build_eval_reports, EvalPlan.params)
