"""Ablations of GraphCert's training data and reward, as configs: the comparisons the sources did
not run cleanly (docs/methods.md, "Known limits"; the configs: docs/evaluation.md).

Each :class:`Ablation` names a **data selection** from the certified dataset, a **stage** and a
**reward**; :func:`select_rows` builds its training rows and :func:`run_ablation` trains it:

* ``stage: grpo`` (the default) — GraphCert GRPO from the shared warm start exactly as the main
  ``graphcert_grpo`` stage does, only the data or the reward differ;
* ``stage: sft`` — supervised fine-tuning **from the base model** (the warm start's recipe and
  budget: every SFT arm runs the same number of optimizer steps whatever its data's size), on one
  teacher trajectory per selected row played in the real sandbox: the row's final program, its
  observation — the error, for a program that fails — then **the row's claimed answer**, as a
  pipeline without a certifier would train on it (no check that the answer is what the program
  printed). This is the certification ablation: what certification buys the Solver.

Data selections. Every selection starts from the same candidates: those the Quizzer produced
(``ok``: the run succeeded, whatever its certificate), none of whose node keys (anchors, answers
and walked nodes, hubs left out: what the curriculum splits by) occurs in the validation / test
splits, not one of a domain's held-out questions, and — for every selection, as evaluation
hygiene rather than certification — not flagged by the leakage filter. Then:

* ``uncertified`` — nothing more: **certification removed, generation controls kept** (same
  Quizzer, axes and prompts). The GraphCert paper's "w/o certification" ablation removed the
  generation controls too; this one isolates certification;
* ``strict_partial`` — certified strict or partial;
* ``strict`` — certified strict;
* ``judged`` — certified strict or partial **and** accepted by the semantic judge (the certified
  dataset must have been made with ``certify.judge: on``; the other selections ignore the
  judge's verdicts, so one certified dataset serves every arm).

``budget: matched`` caps every matched ablation at the size of the smallest matched selection
(a seeded sample), so e.g. strict-only vs strict + partial differ in composition, not in size.
``seeds`` trains the arm once per training seed (default: the domain's seed alone), each in its
own folder (``<name>/seed-<s>`` when there are several); the evaluation shows one row per arm
whose confidence intervals resample seeds, then questions, and pairs every certified SFT arm
with the uncertified one seed by seed (:func:`ablation_pairs`).

Rewards (GRPO): ``graphcert`` (answer F1 + 0.1·(1 − a)·S_evidence) or ``answer_only`` (GraphCert
without the evidence reward: the answer's F1 alone).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import chain_fingerprint, read_parquet

__all__ = [
    "ABLATIONS",
    "DATA",
    "REWARD_KINDS",
    "Ablation",
    "AblationPlan",
    "answer_only_reward",
    "ablations_from",
    "build_ablations",
    "ablation_pairs",
    "pool_rows",
    "run_ablation",
    "select_rows",
    "sft_ablation",
]

DATA: Final = ("strict", "strict_partial", "uncertified", "judged")
REWARD_KINDS: Final = ("graphcert", "answer_only")
STAGES: Final = ("grpo", "sft")


@dataclass(frozen=True)
class Ablation:
    name: str
    data: str = "strict_partial"
    reward: str = "graphcert"
    budget: str = "all"  # "all" | "matched"
    stage: str = "grpo"  # "grpo" | "sft"
    seeds: tuple[int, ...] = ()  # (): the domain's training seed alone

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").replace("+", "").isalnum():
            raise ValueError(f"ablation name {self.name!r}: letters, digits, -, _ and + only")
        if self.data not in DATA:
            raise ValueError(f"ablation {self.name}: unknown data {self.data!r}; known: {DATA}")
        if self.reward not in REWARD_KINDS:
            raise ValueError(f"ablation {self.name}: unknown reward {self.reward!r}; known: {REWARD_KINDS}")
        if self.budget not in ("all", "matched"):
            raise ValueError(f"ablation {self.name}: budget is 'all' or 'matched'")
        if self.stage not in STAGES:
            raise ValueError(f"ablation {self.name}: unknown stage {self.stage!r}; known: {STAGES}")
        seeds = tuple(self.seeds) if isinstance(self.seeds, (list, tuple)) else None
        if seeds is None or any(type(x) is not int or x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
            raise ValueError(f"ablation {self.name}: seeds must be distinct non-negative integers, not {self.seeds!r}")
        object.__setattr__(self, "seeds", seeds)


def _params(a: Ablation) -> dict[str, Any]:
    """An ablation's part of the layer's fingerprint (the fields added later only when set, so
    earlier ablations keep their checkpoints)."""
    out = asdict(a)
    if a.stage == "grpo":
        out.pop("stage")
    if a.seeds:
        out["seeds"] = list(a.seeds)
    else:
        out.pop("seeds")
    return out


def ablations_from(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Ablation, ...]:
    """A domain YAML's ``ablations:`` list; names must be unique."""
    out = []
    for item in raw or ():
        out.append(Ablation(**checked_options(Ablation, item, "ablation")))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate ablation names in {names}")
    return tuple(out)


def answer_only_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """GraphCert's reward without its evidence term: R = a (token F1 of the answer)."""
    from components.rubric.rewards import graphcert_reward

    kwargs.pop("pred_evidence", None)
    return graphcert_reward(completions, **kwargs)


#: what each selection keeps of the candidates every selection starts from (module docstring)
_KEEP: Final = {
    "uncertified": lambda r: True,
    "strict_partial": lambda r: r.get("status") in ("strict", "partial"),
    "strict": lambda r: r.get("status") == "strict",
    "judged": lambda r: r.get("status") in ("strict", "partial") and r.get("verdict") == "accept",
}


def _selection(
    rows: Sequence[Mapping[str, Any]], data: str, held_out: set[str], keys: Mapping[str, Sequence[str]] | None
) -> list[Mapping[str, Any]]:
    from components.curriculum.build import grounded_entities

    keep = _KEEP[data]

    def entities(r: Mapping[str, Any]) -> set[str]:
        return set(keys[str(r["id"])] if keys is not None and str(r["id"]) in keys else grounded_entities(r))

    return [r for r in pool_rows(rows) if not entities(r) & held_out and keep(r)]


def pool_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows every selection starts from (module docstring): the Quizzer's runs that
    succeeded, not flagged by the leakage filter, not one of a domain's held-out questions."""
    from components.quizzer.noisy import held_out

    return [r for r in rows if r.get("ok") and not r.get("leaked") and not held_out(r)]


def _entities(row: Mapping[str, Any]) -> list[str]:
    value = row.get("entities")
    if isinstance(value, str):
        return list(json.loads(value))
    return [str(e) for e in value] if value is not None else []


def select_rows(
    ablations: Sequence[Ablation],
    certified: Sequence[Mapping[str, Any]],
    curriculum: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
    keys: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, list[Mapping[str, Any]]]:
    """Training rows per ablation (module docstring), matched budgets applied. ``keys``: each
    row's node keys (:func:`components.curriculum.build.node_keys`: anchors, answers and walked
    nodes, hubs left out — what the split keys by); without them a row is keyed by its anchors
    alone. Raises ``ValueError`` for a ``judged`` selection of a dataset the judge did not
    review."""
    held_out = {e for r in curriculum if r["split"] in ("validation", "test") for e in _entities(r)}
    judged = any(r.get("verdict") in ("accept", "reject", "uncertain") for r in certified)
    for a in ablations:
        if a.data == "judged" and not judged:
            raise ValueError(
                f"ablation {a.name}: data 'judged' needs a certified dataset made with certify.judge: on "
                "(this one has no judge verdicts)"
            )
    chosen = {a.name: _selection(certified, a.data, held_out, keys) for a in ablations}
    matched = [len(chosen[a.name]) for a in ablations if a.budget == "matched"]
    if matched:
        n = min(matched)
        for a in ablations:
            if a.budget == "matched" and len(chosen[a.name]) > n:
                chosen[a.name] = random.Random(f"{seed}:{a.name}").sample(chosen[a.name], n)
    return chosen


def run_ablation(
    ablation: Ablation,
    start_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: Any,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
) -> Any:
    """GraphCert GRPO from ``start_dir`` on ``rows`` with the ablation's reward."""
    from components.rubric.rewards import graphcert_reward
    from components.training.stages import graphcert_grpo

    reward = answer_only_reward if ablation.reward == "answer_only" else graphcert_reward
    return graphcert_grpo(
        start_dir,
        rows,
        db_location,
        config,
        output_dir,
        data_fingerprint=data_fingerprint,
        domain=domain,
        reward=reward,
        ablation=asdict(ablation),
    )


SFT_TEXT: Final = (
    "certification ablation: supervised fine-tuning from the base model (the warm start's recipe and "
    "budget) on teacher trajectories of the selected candidates — the final program played in the real "
    "sandbox (a failing program keeps its error observation), then the candidate's claimed answer, "
    "unchecked, as a pipeline without a certifier would train"
)


def sft_ablation(
    ablation: Ablation,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: Any,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
    cache_root: Path | str | None = None,
) -> Any:
    """SFT from the base model of ``config`` on ``rows`` (module docstring): the warm start's
    number of optimizer steps whatever the rows' count, on at most ``max_examples`` rows drawn
    in a seeded order. Raises ``ValueError`` when no trajectory plays out."""
    import time

    from transformers import AutoTokenizer

    from components.tools.episodes import python_cypher_envs
    from components.training.anchors import solver_rows
    from components.training.checkpoint import base_model_dir, sft_checkpoint
    from components.training.teacher import teacher_records, teacher_steps

    t0 = time.perf_counter()
    base = base_model_dir(config, cache_root)
    tokenizer = AutoTokenizer.from_pretrained(base)
    order = list(rows)
    random.Random(f"{config.seed}:{ablation.name}").shuffle(order)
    used, _ = solver_rows(order[: config.resolved()["max_examples"]], db_location)
    with python_cypher_envs(db_location, max_rounds=2) as make_env:
        records, dropped = teacher_records(used, teacher_steps, make_env, tokenizer, failed_calls=True)
    failed = sum(r.stats.valid_calls == 0 for r in records)
    return sft_checkpoint(
        base,
        records,
        dropped,
        config,
        output_dir,
        t0,
        method="sft-ablation",
        method_text=SFT_TEXT,
        data_fingerprint=data_fingerprint,
        domain=domain,
        teacher={"rows": len(used), "trajectories": len(records), "failed_calls": failed, "answers": "claimed"},
    )


def ablation_pairs(summary: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The evaluation's paired differences of the certification ablation: every certified SFT arm
    (``ablation: <name>``) against every uncertified SFT arm, from the ablations' summary records."""
    sft = {(r["name"], r["data"]) for r in summary if r.get("stage") == "sft"}
    raw = [n for n, d in sorted(sft) if d == "uncertified"]
    return [(f"ablation: {n}", f"ablation: {u}") for n, d in sorted(sft) if d != "uncertified" for u in raw]


@dataclass(frozen=True)
class AblationPlan:
    """The ``ablations`` layer's config: the domain's training config and its ablations."""

    train: Any  # TrainConfig
    ablations: tuple[Ablation, ...] = ()

    def params(self) -> dict[str, Any]:
        return {"train": self.train.resolved_without_dancer(), "ablations": [_params(a) for a in self.ablations]}


def build_ablations(inputs: Mapping[str, Artifact], plan: AblationPlan, out_dir: Path, ctx: BuildContext) -> Artifact:
    """The ``ablations`` layer: one checkpoint per ablation in ``<out_dir>/<name>/`` — GraphCert
    GRPO from the ``checkpoint`` input, or SFT from the base model. The summary lists each
    ablation with its config, seed, folder name, selected items, trained examples, last reward or
    loss and time. Raises ``ValueError`` when an ablation selects no training rows."""
    from components.curriculum.build import node_keys

    certified = inputs["certified"]
    rows = read_parquet(str(certified.path))
    keyed, _ = node_keys(pool_rows(rows), str(inputs["snapshot"].path))
    chosen = select_rows(
        plan.ablations,
        rows,
        read_parquet(str(inputs["curriculum"].path)),
        seed=plan.train.seed,
        keys={i: k.keys for i, k in keyed.items()},
    )
    from components.training.checkpoint import stage_start

    train = plan.train.for_stage("ablations")
    start = stage_start(plan.train, "ablations", inputs["checkpoint"].path, ctx.data_root)
    common = {"data_fingerprint": certified.fingerprint, "domain": ctx.domain}
    snapshot = str(inputs["snapshot"].path)
    for a in plan.ablations:
        if not chosen[a.name]:
            raise ValueError(f"ablation {a.name} selects no training rows")

    def train_arm(a: Ablation, seed: int, folder: Path) -> Any:
        config = replace(train, seed=seed)
        if a.stage == "sft":
            return sft_ablation(a, chosen[a.name], snapshot, config, folder, cache_root=ctx.data_root, **common)
        return run_ablation(a, str(start), chosen[a.name], snapshot, config, folder, **common)  # anchors its rows

    parents = [inputs[k].fingerprint for k in sorted(inputs) if k != "checkpoint"]
    summary = []
    for a, seed in arm_order(plan.ablations, train.seed):
        folder = f"{a.name}/seed-{seed}" if len(a.seeds) > 1 else a.name
        arm_parents = parents + ([inputs["checkpoint"].fingerprint] if a.stage == "grpo" else [])
        key = chain_fingerprint(arm_parents, f"ablation-arm:{ABLATIONS.code_version}", _arm_params(a, seed, train))
        cache = Path(ctx.data_root) / "ablation-arms" / ctx.domain / key
        record = cached_arm(cache, out_dir / folder, lambda d, a=a, seed=seed: train_arm(a, seed, d))
        ctx.log(f"ablation {folder}: {'reused' if record['reused'] else 'trained'} ({record['wall_s']:.0f} s)")
        summary.append(
            {
                **asdict(a),
                "seeds": list(a.seeds),
                "seed": seed,
                "items": len(chosen[a.name]),
                "folder": folder,
                **{k: record[k] for k in ("examples", "last_reward", "last_loss", "wall_s", "reused")},
            }
        )
    rank = {a.name: i for i, a in enumerate(plan.ablations)}
    summary.sort(key=lambda r: (rank[r["name"]], r["seed"]))
    return ABLATIONS.artifact(
        inputs, plan, ctx, path=out_dir, counts={"checkpoints": len(summary)}, summary={"ablations": summary}
    )


def arm_order(ablations: Sequence[Ablation], default_seed: int) -> list[tuple[Ablation, int]]:
    """The order the arms train in: every ablation's first seed, then every second seed, and so
    on — so a run stopped part-way (a session's time, a crash) leaves one of each arm cached
    before any arm's extra seeds (:func:`cached_arm`)."""
    seeds = {a.name: list(a.seeds) or [default_seed] for a in ablations}
    depth = max((len(s) for s in seeds.values()), default=0)
    return [(a, seeds[a.name][i]) for i in range(depth) for a in ablations if i < len(seeds[a.name])]


def _arm_params(a: Ablation, seed: int, train: Any) -> dict[str, Any]:
    """What one arm's checkpoint depends on besides its inputs and code: the ablation without its
    seed list (adding a seed keeps the others' checkpoints), the seed and the training config."""
    return {
        "ablation": {k: v for k, v in _params(a).items() if k != "seeds"},
        "seed": seed,
        "train": train.resolved_without_dancer(),
    }


def cached_arm(cache: Path, folder: Path, train: Callable[[Path], Any]) -> dict[str, Any]:
    """One arm's checkpoint in ``folder``, trained once: ``train(dir)`` writes it into a
    temporary folder beside ``cache``, which becomes ``cache`` (one rename) with an ``arm.json``
    record (examples, last reward or loss, time) once it is complete; later runs — the same
    inputs, code, arm, seed and config — hard-link (or copy) it into ``folder`` instead of
    training again. Returns the record with ``reused``."""
    import shutil

    record_file = cache / "arm.json"
    reused = record_file.exists()
    if not reused:
        tmp = cache.with_name(cache.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        result = train(tmp)
        rewards = [c["reward"] for c in result.curves if c.get("reward") is not None]
        record = {
            "examples": result.examples,
            "last_reward": rewards[-1] if rewards else None,
            "last_loss": result.losses[-1] if result.losses else None,
            "wall_s": result.wall_s,
        }
        (tmp / "arm.json").write_text(json.dumps(record))
        shutil.rmtree(cache, ignore_errors=True)
        tmp.rename(cache)
    record = json.loads(record_file.read_text())
    folder.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        cache, folder, copy_function=_link_or_copy, ignore=shutil.ignore_patterns("arm.json"), dirs_exist_ok=True
    )
    return {**record, "reused": reused}


def _link_or_copy(src: str, dst: str) -> None:
    import os
    import shutil

    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


ABLATIONS: Final = Layer("ablations", build_ablations, AblationPlan.params)
