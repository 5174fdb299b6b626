"""Certified rejection-sampling fine-tuning (RFT): the project's certifier as the filter of the
Solver's own trajectories — a training stage beyond the three papers.

A round (``rft_rounds`` of them, from the warm start):

1. **Sample.** ``rft_questions`` training questions (a seeded sample, another one each round,
   anchored by the names the questions use) are each played ``rft_samples`` (k) times by the
   current Solver in the real Python + Cypher sandbox at ``rft_temperature`` (> 0).
2. **Certify.** Each finished trajectory becomes a candidate — its final program (the last code
   step, run again in a fresh sandbox: what it marks is its evidence, what it prints its answer;
   :func:`~components.quizzer.external.candidate_from_program`) — certified on the snapshot by
   the project's certifier (:func:`~components.certify.certifier.certify_many`).
3. **Keep** a trajectory only when every call it made ran, it answered within its turns, its
   queries returned rows, the certificate is **strict**, and both the answer it gave and the
   answer its program printed equal the certified gold answer (typed comparison,
   :func:`~components.rubric.metrics.answers_equal`); identical programs (whitespace aside) of
   one question are kept once. Everything else is counted by why (:data:`REJECTIONS`).
4. **Fine-tune** the current Solver for ``rft_steps`` steps on the teacher trajectories of the
   warm start plus every trajectory kept so far, as the Solver played them (its own tokens
   trained; the environment's replies masked, as in the warm start).
5. **Measure** pass@k on the first ``rft_val_questions`` questions of the validation split (k
   samples each; a question passes when one sample's answer equals the gold answer) before the
   first round and after each one — the stage's curve, never used to pick anything.

Rounds resume: each finished round (its weights, kept trajectories and counts) is saved in the
stage's work folder, and a rebuild continues after the last finished round with the same
questions (the per-round samples are seeded by the round number).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from components.rollout.runner import RolloutRecord
from components.store.artifact import Layer

__all__ = [
    "GRAPHCERT_RFT",
    "REJECTIONS",
    "RFT_TEXT",
    "build_graphcert_rft",
    "Judged",
    "final_program",
    "graphcert_rft",
    "judge_trajectories",
    "pass_at_k",
]

#: why a sampled trajectory was not kept (in the order the reasons are tested)
REJECTIONS: Final = {
    "unfinished": "no answer within the turn budget (or the episode was cut)",
    "failed_call": "a code step did not parse or raised",
    "no_program": "it answered without running a program",
    "wrong_answer": "its answer is not the certified gold answer",
    "empty_result": "its program's queries returned no rows",
    "not_printed": "its program does not print the answer it gave",
    "not_strict": "the certifier did not certify its program strict",
    "duplicate": "the same program was already kept for this question",
}

RFT_TEXT: Final = (
    "certified rejection-sampling fine-tuning (graphdojo): the Solver's own sampled trajectories in the Python + "
    "Cypher sandbox, kept only when the certifier certifies their final program strict and their answer equals the "
    "certified gold answer, fine-tuned on with the warm start's teacher trajectories (TRL 1.16 `SFTTrainer`, "
    "environment tokens masked), for several rounds."
)

_CODE = re.compile(r"```python\s*\n(.*?)```", re.S)


def final_program(record: RolloutRecord) -> str | None:
    """The code of the episode's last executed call (its final program), or ``None``."""
    from components.training.teacher import last_call

    call = last_call(record)
    return None if call is None else str(call["code"])


def _normalised(program: str) -> str:
    return " ".join(program.split())


@dataclass
class Judged:
    """The kept trajectories of one batch and every rejection's reason."""

    kept: list[RolloutRecord] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    kept_questions: set[str] = field(default_factory=set)


def judge_trajectories(records: Sequence[RolloutRecord], db_location: str) -> Judged:
    """Keep the trajectories that pass step 3 of the module docstring; ``records`` carry their
    dataset row (``id``, ``question``, ``answer``, ``answer_type``)."""
    from components.certify.certifier import certify_many
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph import open_backend
    from components.quizzer.external import candidate_from_program
    from components.rubric.metrics import answers_equal

    out = Judged()
    pending: list[tuple[RolloutRecord, str]] = []
    for rec in records:
        s = rec.stats
        gold, kind = rec.row.get("answer"), rec.row.get("answer_type")
        program = final_program(rec)
        if s is None or not s.answered or s.truncated:
            out.rejected["unfinished"] += 1
        elif s.invalid_calls:
            out.rejected["failed_call"] += 1
        elif program is None:
            out.rejected["no_program"] += 1
        elif not answers_equal(s.answer, gold, kind):
            out.rejected["wrong_answer"] += 1
        else:
            pending.append((rec, program))
    if not pending:
        return out
    backend = open_backend(db_location)
    try:
        schema = backend.schema()
        path = ReadOnlyQueryPath(backend, schema=schema)
        current = backend.fingerprint()
        cands = [
            candidate_from_program(
                path, schema, f"rft-{i}", str(rec.row["question"]), str(rec.row.get("answer_type")), program
            )
            for i, (rec, program) in enumerate(pending)
        ]
        certs = certify_many(
            cands, schema=schema, query_path=path, current_fingerprint=current, snapshot_fingerprint=current
        )
    finally:
        backend.close()
    seen: set[tuple[str, str]] = set()
    for (rec, program), cand, cert in zip(pending, cands, certs, strict=True):
        gold, kind = rec.row.get("answer"), rec.row.get("answer_type")
        if cand.evidence and all(not e.get("rows") for e in cand.evidence):
            out.rejected["empty_result"] += 1
        elif not cand.failure_reason and not answers_equal(cand.answer, gold, kind):
            out.rejected["not_printed"] += 1
        elif cert.status != "strict":
            out.rejected["not_strict"] += 1
        else:
            key = (str(rec.row.get("id")), _normalised(program))
            if key in seen:
                out.rejected["duplicate"] += 1
                continue
            seen.add(key)
            out.kept.append(rec)
            out.kept_questions.add(key[0])
    return out


def pass_at_k(records: Sequence[RolloutRecord]) -> dict[str, float]:
    """``pass@k`` (a question passes when one of its samples' answers equals the gold answer),
    the mean per-sample EM, and the questions counted."""
    from components.rubric.metrics import answers_equal

    by_q: dict[str, list[bool]] = {}
    for rec in records:
        ok = rec.stats is not None and answers_equal(
            rec.stats.answer, rec.row.get("answer"), rec.row.get("answer_type")
        )
        by_q.setdefault(str(rec.row.get("id")), []).append(bool(ok))
    n = len(by_q)
    return {
        "questions": n,
        "pass_at_k": sum(any(v) for v in by_q.values()) / n if n else 0.0,
        "em": sum(sum(v) for v in by_q.values()) / max(1, sum(len(v) for v in by_q.values())),
    }


def _play(
    model_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    r: Mapping[str, Any],
    config: Any,
    seed: int,
) -> list[RolloutRecord]:
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout.runner import CODE_STOPS, RolloutConfig, RolloutRunner
    from components.tools.episodes import python_cypher_envs

    rollout = RolloutConfig(
        max_turns=r["rl_turns"],
        max_new_tokens=r["rl_new_tokens"],
        temperature=r["rft_temperature"],
        seed=seed,
        stops=CODE_STOPS,
    )
    backend = TransformersBackend(model_dir, threads=config.threads, dtype=config.precision)
    try:
        with python_cypher_envs(db_location, max_rounds=max(1, r["rl_turns"] - 1)) as make_env:
            rows = [
                {
                    "question": x["question"],
                    "answer": x["answer"],
                    "answer_type": x.get("answer_type"),
                    "id": x.get("id"),
                }
                for x in rows
            ]
            return RolloutRunner(backend, make_env, rollout).run(rows, n=int(r["rft_samples"]))
    finally:
        backend.close()


def _example(rec: RolloutRecord) -> dict[str, list[int]]:
    from components.training.sft import sft_example

    return sft_example(rec.prompt_ids, rec.completion_ids, rec.loss_mask)


def graphcert_rft(
    start_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    teacher_rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: Any,
    output_dir: str | Path,
    *,
    work_dir: str | Path,
    data_fingerprint: str,
    domain: str,
    validation: Sequence[Mapping[str, Any]] = (),
    log: Any = None,
) -> Any:
    """RFT from ``start_dir`` (the warm start) on ``rows`` (certified training rows, not yet
    anchored) with the teacher trajectories of ``teacher_rows`` (the warm start's, anchored);
    see the module docstring. ``work_dir`` keeps the finished rounds (resume); the final
    Solver is written to ``output_dir`` with its model card and per-round curves."""
    from transformers import AutoTokenizer

    from components.tools.episodes import python_cypher_envs
    from components.training.anchors import solver_rows
    from components.training.checkpoint import CheckpointResult, write_checkpoint_files
    from components.training.sft import SFTRunConfig, run_sft
    from components.training.teacher import certified_teacher_records

    t0, r = time.perf_counter(), config.resolved()
    say = log or (lambda _m: None)
    rows = list(rows)
    if not rows:
        raise ValueError("no training rows for rejection-sampling fine-tuning")
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(start_dir)
    with python_cypher_envs(db_location, max_rounds=2) as make_env:
        teacher, dropped = certified_teacher_records(list(teacher_rows), make_env, tokenizer)
    teacher_examples = [_example(x) for x in teacher]  # the same every round
    val = solver_rows(list(validation)[: int(r["rft_val_questions"])], db_location)[0]
    current, kept_examples, rounds, losses = str(start_dir), [], [], []
    before = work / "round-0.json"
    if val and not before.is_file():
        before.write_text(json.dumps(pass_at_k(_play(current, val, db_location, r, config, config.seed + 7))))
    start_curve = json.loads(before.read_text()) if before.is_file() else None
    for i in range(1, int(r["rft_rounds"]) + 1):
        folder, summary = work / f"round-{i}", work / f"round-{i}.json"
        if summary.is_file() and (folder / "config.json").is_file():  # finished before: resume after it
            state = json.loads(summary.read_text())
            rounds.append(state["round"])
            kept_examples += state["kept_examples"]
            losses += state["round"]["losses"]
            current = str(folder)
            say(f"[rft] round {i}: finished before, resumed")
            continue
        rng = random.Random(f"{config.seed}:{i}")
        chosen = solver_rows(rng.sample(rows, min(len(rows), int(r["rft_questions"]))), db_location)[0]
        t_round = time.perf_counter()
        played = _play(current, chosen, db_location, r, config, config.seed * 1000 + i)
        judged = judge_trajectories(played, db_location)
        new = [_example(x) for x in judged.kept]
        kept_examples += new
        examples = teacher_examples + kept_examples
        sft = run_sft(
            current,
            examples,
            folder,
            SFTRunConfig(
                max_steps=int(r["rft_steps"]),
                learning_rate=float(r["rft_learning_rate"]),
                batch_size=int(r["batch_size"]),
                max_length=4096,
                seed=config.seed + i,
                threads=config.threads,
                precision=config.precision,
                lora=dict(config.lora) if config.lora else None,
                share_prefix=config.share_prefix,
            ),
        )
        curve = pass_at_k(_play(str(folder), val, db_location, r, config, config.seed + 7)) if val else None
        state_round = {
            "round": i,
            "questions": len(chosen),
            "sampled": len(played),
            "kept": len(judged.kept),
            "kept_questions": len(judged.kept_questions),
            "kept_total": len(kept_examples),
            "rejected": dict(judged.rejected),
            "examples": len(examples),
            "losses": sft.losses,
            "validation": curve,
            "wall_s": round(time.perf_counter() - t_round, 1),
        }
        summary.write_text(json.dumps({"round": state_round, "kept_examples": new}))
        rounds.append(state_round)
        losses += sft.losses
        if current != str(start_dir):  # the previous round's weights are no longer needed
            for f in Path(current).glob("*.safetensors"):
                f.unlink()
        current = str(folder)
        say(
            f"[rft] round {i}/{r['rft_rounds']}: kept {len(judged.kept)} of {len(played)} trajectories "
            f"({len(judged.kept_questions)} questions); rejected {dict(judged.rejected)}"
            + (f"; validation pass@{r['rft_samples']} {curve['pass_at_k']:.3f}" if curve else "")
        )
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for f in Path(current).iterdir():
        if f.is_file() and f.name not in ("README.md", "training_log.json", "curves.png"):
            shutil.copy2(f, out / f.name)
    validation_curve = (
        [{"step": 0, "reward": start_curve["pass_at_k"], "reward_se": None, "episodes": start_curve["questions"]}]
        if start_curve
        else []
    )
    validation_curve += [
        {
            "step": x["round"],
            "reward": x["validation"]["pass_at_k"],
            "reward_se": None,
            "episodes": x["validation"]["questions"],
        }
        for x in rounds
        if x.get("validation")
    ]
    result = CheckpointResult(
        str(out),
        str(start_dir),
        losses,
        len(teacher) + len(kept_examples),
        dropped,
        time.perf_counter() - t0,
        {**r, "method": "graphcert-rft"},
        method="graphcert-rft",
        curves=[{"step": x["round"], "loss": x["losses"][-1] if x["losses"] else None} for x in rounds],
        notes=[
            f"round {x['round']}: kept {x['kept']} of {x['sampled']} sampled trajectories ({x['kept_questions']} of "
            f"{x['questions']} questions); rejected {json.dumps(x['rejected'], sort_keys=True)}"
            for x in rounds
        ]
        + ["validation curve: pass@k (k = rft_samples) on held-out validation questions, step = round"],
        validation=validation_curve,
        selection={"rounds": rounds, "teacher": len(teacher), "kept_total": len(kept_examples)},
    )
    write_checkpoint_files(result, data_fingerprint=data_fingerprint, domain=domain, method_text=RFT_TEXT)
    return result


def build_graphcert_rft(inputs: Mapping[str, Any], config: Any, out_dir: Path, ctx: Any) -> Any:
    """``graphcert_rft``: :func:`graphcert_rft` from the ``checkpoint`` input (the warm start) on
    the certified rows of the ``curriculum`` input's training split, with the warm start's own
    teacher rows, the validation split for pass@k, the ``snapshot`` graph. ``rft_rounds: 0``
    trains nothing: the artifact stores nothing and says so. The finished rounds wait in
    ``<data>/work/graphcert_rft/<domain>/<fingerprint>/`` until the stage lands (resume)."""
    from components.training._common import work_folder
    from components.training.checkpoint import certified_train_rows

    r = config.resolved()
    if not int(r["rft_rounds"]):
        reason = "rft_rounds is 0 in this config: rejection-sampling fine-tuning is off"
        ctx.log(f"{ctx.domain}/graphcert_rft not trained: {reason}")
        return GRAPHCERT_RFT.artifact(inputs, config, ctx, path=None, summary={"trained": False, "reason": reason})
    curriculum, certified, snapshot = inputs["curriculum"], inputs["certified"], inputs["snapshot"]
    work = work_folder(ctx, "graphcert_rft")
    result = graphcert_rft(
        str(inputs["checkpoint"].path),
        certified_train_rows(certified, curriculum),
        certified_train_rows(certified, curriculum, snapshot, limit=int(r["max_examples"])),
        str(snapshot.path),
        config,
        out_dir,
        work_dir=work,
        data_fingerprint=curriculum.fingerprint,
        domain=ctx.domain,
        validation=certified_train_rows(certified, curriculum, split="validation"),
        log=ctx.log,
    )
    shutil.rmtree(work, ignore_errors=True)
    return GRAPHCERT_RFT.artifact(
        inputs,
        config,
        ctx,
        path=out_dir,
        counts={"examples": result.examples, "kept": int(result.selection["kept_total"])},
        summary={**result.summary(), "trained": True},
    )


def _params(config: Any) -> dict[str, Any]:
    return config.resolved_without_dancer()


GRAPHCERT_RFT: Final = Layer("graphcert_rft", build_graphcert_rft, _params)
