"""GRPO's suspects, measured on played episodes without training (``benchmarks/rl_diagnostics.py``).

Three questions that need no optimizer step, each a function over episodes the starting Solver
played in the real sandbox (:func:`~components.training.selection.play`):

* :func:`answer_disagreement` — how often the answer the completion's *text* yields (the last
  ``<answer>`` block or ``Answer:`` line, which the rewards read before 2026-12-04) differs from the
  answer the environment parsed from the episode's answer step (what evaluation scores, and what
  the rewards read now).
* :func:`advantage_sizes` — GRPO's advantages as TRL computes them (rewards centred per group, then
  divided by the group's standard deviation, the batch's, or not at all) in groups whose answers
  are **all wrong** against groups with a mix of right and wrong answers: with the GraphCert
  reward ``a + 0.1·(1 − a)·e`` an all-wrong group's rewards differ only by the evidence term,
  and per-group scaling blows those differences up to full size.
* :func:`logprob_gap` — the log-probability the sampler gave each model token (a bfloat16 copy
  of the policy, the nucleus at ``top_p``, as the engine samples) against the one the trainer
  scores it with (float32, the full softmax at the same temperature): what an importance ratio of
  1 hides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

__all__ = [
    "advantage_sizes",
    "answer_disagreement",
    "group_advantages",
    "logprob_gap",
    "report_lines",
    "summarize_groups",
]


def answer_disagreement(records: Sequence[Any], limit: int = 3) -> dict[str, Any]:
    """Episodes whose text-read answer (:func:`~components.rubric.rewards.extract_answer`) and
    parsed answer differ (normalised; one present and the other not counts): counts, share and up
    to ``limit`` examples."""
    from components.rubric.metrics import normalize_answer
    from components.rubric.rewards import extract_answer

    examples: list[dict[str, Any]] = []
    counts = {"text_only": 0, "parsed_only": 0, "different": 0}
    for rec in records:
        text = extract_answer(rec.completion_text)
        parsed = rec.stats.answer if rec.stats is not None and rec.stats.answered else None
        if text is None and parsed is None:
            continue
        if parsed is None:
            kind = "text_only"
        elif text is None:
            kind = "parsed_only"
        elif normalize_answer(text) != normalize_answer(parsed):
            kind = "different"
        else:
            continue
        counts[kind] += 1
        if len(examples) < limit:
            examples.append({"kind": kind, "text": text, "parsed": parsed})
    n = len(records)
    disagree = sum(counts.values())
    return {"episodes": n, "disagree": disagree, "share": disagree / n if n else 0.0, **counts, "examples": examples}


def group_advantages(groups: Sequence[Sequence[float]], scale: str = "group") -> list[list[float]]:
    """TRL's GRPO advantages of ``groups`` of rewards: each reward minus its group's mean, divided
    by the group's standard deviation (``group``), the whole batch's (``batch``) — unbiased, plus
    1e-4, as TRL — or by nothing (``none``)."""
    import torch

    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale must be group, batch or none, got {scale!r}")
    sizes = {len(g) for g in groups}
    if len(sizes) != 1 or 0 in sizes or 1 in sizes:
        raise ValueError("groups must all have the same size, at least 2")
    r = torch.tensor([list(g) for g in groups], dtype=torch.float64)
    centred = r - r.mean(dim=1, keepdim=True)
    if scale == "group":
        centred = centred / (r.std(dim=1, keepdim=True) + 1e-4)
    elif scale == "batch":
        centred = centred / (r.std() + 1e-4)
    return centred.tolist()


def advantage_sizes(
    rewards: Sequence[Sequence[float]],
    correct: Sequence[Sequence[float]],
    scales: Sequence[str] = ("group", "batch", "none"),
) -> dict[str, Any]:
    """Mean |advantage| per scaling in all-wrong groups (no answer right) and in mixed groups
    (some right, some wrong), and how many all-wrong groups still have rewards that differ — the
    groups whose advantages come from the evidence term alone."""
    if len(rewards) != len(correct):
        raise ValueError(f"{len(rewards)} reward groups but {len(correct)} correctness groups")
    wrong = [i for i, c in enumerate(correct) if max(c) <= 0.0]
    mixed = [i for i, c in enumerate(correct) if max(c) > min(c)]
    out: dict[str, Any] = {
        "groups": len(rewards),
        "all_wrong": len(wrong),
        "all_wrong_varying": sum(1 for i in wrong if max(rewards[i]) > min(rewards[i])),
        "mixed": len(mixed),
        "all_wrong_reward_spread": fmean([max(rewards[i]) - min(rewards[i]) for i in wrong]) if wrong else 0.0,
    }
    for scale in scales:
        adv = group_advantages(rewards, scale)
        for name, idx in (("all_wrong", wrong), ("mixed", mixed)):
            values = [abs(a) for i in idx for a in adv[i]]
            out[f"{scale}_{name}_abs_adv"] = fmean(values) if values else 0.0
    return out


def _token_logprobs(model: Any, record: Any, temperature: float, top_p: float) -> Any:
    """The engine's nucleus (:func:`~components.training.ppo.sampling_logprobs`); a token outside
    it gets ``-inf``."""
    import torch

    from components.training.ppo import sampling_logprobs

    ids = torch.tensor([list(record.prompt_ids) + list(record.completion_ids)])
    start = len(record.prompt_ids)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, start - 1 : -1]
    mask = torch.tensor(record.loss_mask, dtype=torch.bool)
    targets = torch.tensor(record.completion_ids)
    return sampling_logprobs(logits[mask], targets[mask], temperature, top_p, keep_targets=False)


def logprob_gap(
    model_dir: str,
    records: Sequence[Any],
    temperature: float,
    top_p: float,
    threads: int | None = None,
    sampler_precision: str = "bfloat16",
) -> dict[str, Any]:
    """Per model token of ``records``: the sampler's log-probability (weights in
    ``sampler_precision`` — what the RL stage samples with: a bfloat16 copy where training runs in
    bfloat16, the float32 policy itself elsewhere — and the nucleus at ``top_p``) minus the
    trainer's (float32, full softmax), both at ``temperature``. Mean difference, mean absolute
    difference, the share of tokens more than 0.1 nats apart, and tokens the sampler's nucleus
    would not contain."""
    import torch
    from transformers import AutoModelForCausalLM

    from components.llm.precision import torch_dtype

    if threads:
        torch.set_num_threads(threads)
    scorer = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    sampler = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype(sampler_precision)).eval()
    diffs: list[float] = []
    outside = 0
    for rec in records:
        if not any(rec.loss_mask):
            continue
        score = _token_logprobs(scorer, rec, temperature, 1.0)
        sample = _token_logprobs(sampler, rec, temperature, top_p)
        finite = torch.isfinite(sample)
        outside += int((~finite).sum())
        diffs += (sample[finite] - score[finite]).tolist()
    n = len(diffs)
    return {
        "tokens": n,
        "mean_diff": fmean(diffs) if n else 0.0,
        "mean_abs_diff": fmean(abs(d) for d in diffs) if n else 0.0,
        "share_over_0.1": sum(abs(d) > 0.1 for d in diffs) / n if n else 0.0,
        "outside_nucleus": outside,
        "temperature": temperature,
        "top_p": top_p,
        "sampler_precision": sampler_precision,
    }


def summarize_groups(values: Sequence[float], size: int) -> list[list[float]]:
    """``values`` (one per episode, questions' samples adjacent) as groups of ``size``."""
    if size < 1 or len(values) % size:
        raise ValueError(f"{len(values)} values do not split into groups of {size}")
    return [list(values[i : i + size]) for i in range(0, len(values), size)]


def report_lines(result: Mapping[str, Any]) -> list[str]:
    """The diagnostics as Markdown lines (for docs/training.md)."""
    d, a, g = result["disagreement"], result["advantages"], result["logprobs"]
    lines = [
        f"- answer read from the text vs parsed by the environment: {d['disagree']} of {d['episodes']} episodes "
        f"differ ({d['share']:.1%}: {d['text_only']} text only, {d['parsed_only']} parsed only, "
        f"{d['different']} different values)",
        f"- groups: {a['groups']}; all answers wrong {a['all_wrong']} (of them rewards still differ: "
        f"{a['all_wrong_varying']}, mean spread {a['all_wrong_reward_spread']:.3f}); mixed {a['mixed']}",
    ]
    for scale in ("group", "batch", "none"):
        if f"{scale}_all_wrong_abs_adv" in a:
            lines.append(
                f"- mean |advantage| with {scale} scaling: all-wrong groups {a[f'{scale}_all_wrong_abs_adv']:.3f}, "
                f"mixed groups {a[f'{scale}_mixed_abs_adv']:.3f}"
            )
    lines.append(
        f"- sampler ({g.get('sampler_precision', 'bfloat16')}, top-p {g['top_p']}) − scorer (float32, full softmax) "
        f"log-prob over {g['tokens']} model tokens: "
        f"mean {g['mean_diff']:+.4f}, mean |·| {g['mean_abs_diff']:.4f}, {g['share_over_0.1']:.1%} over 0.1 nats; "
        f"{g['outside_nucleus']} outside the nucleus"
    )
    return lines
