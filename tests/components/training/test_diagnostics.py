"""GRPO's suspects measured without training (components/training/diagnostics.py): TRL's
advantage formula on the learning table's pattern, the engine's nucleus, the text-vs-parsed answer
count, and the sampler-vs-scorer log-prob gap on episodes the real tiny model played in the real
sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from components.training.diagnostics import (
    advantage_sizes,
    answer_disagreement,
    group_advantages,
    logprob_gap,
    report_lines,
    summarize_groups,
)
from tests.components.training.test_selection import _record


def test_group_scaling_turns_evidence_noise_into_full_size_advantages() -> None:
    """An all-wrong group whose GraphCert rewards differ by 0.01–0.03 (the evidence term) gets
    advantages of about ±1 under per-group scaling (TRL's default), ±0.01 unscaled."""
    wrong = [0.02, 0.03, 0.0, 0.01]
    mixed = [1.0, 0.02, 1.0, 0.0]
    std = torch.tensor(wrong).std().item()  # unbiased, as TRL
    assert group_advantages([wrong, mixed], "group")[0] == pytest.approx([(x - 0.015) / (std + 1e-4) for x in wrong])
    assert group_advantages([wrong, mixed], "none")[0] == pytest.approx([x - 0.015 for x in wrong])
    sizes = advantage_sizes([wrong, mixed], [[0.0] * 4, [1.0, 0.0, 1.0, 0.0]])
    assert (sizes["all_wrong"], sizes["all_wrong_varying"], sizes["mixed"]) == (1, 1, 1)
    # as large as a mixed group's (0.77 against 0.87), where unscaled they are 50× smaller
    assert sizes["group_all_wrong_abs_adv"] > 0.8 * sizes["group_mixed_abs_adv"]
    assert sizes["none_all_wrong_abs_adv"] == pytest.approx(0.01)
    assert sizes["batch_all_wrong_abs_adv"] < 0.05 < sizes["batch_mixed_abs_adv"]
    assert sizes["all_wrong_reward_spread"] == pytest.approx(0.03)
    with pytest.raises(ValueError, match="same size"):
        group_advantages([[1.0, 0.0], [1.0]])
    with pytest.raises(ValueError, match="scale"):
        group_advantages([[1.0, 0.0]], "token")
    assert summarize_groups([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="groups of 3"):
        summarize_groups([1, 2, 3, 4], 3)


def test_answer_disagreement_counts_each_kind() -> None:
    agree, text_only = _record("12"), _record(None, answered=False)  # the text says <answer>None</answer>
    different = _record("12")
    different.completion_text = "<answer>13</answer>"
    parsed_only = _record("7")
    parsed_only.completion_text = "no tag"
    out = answer_disagreement([agree, text_only, different, parsed_only])
    assert (out["episodes"], out["disagree"]) == (4, 3)
    assert (out["text_only"], out["parsed_only"], out["different"]) == (1, 1, 1)
    assert {e["kind"] for e in out["examples"]} == {"text_only", "parsed_only", "different"}


def test_logprob_gap_on_played_episodes(tmp_path: Path) -> None:
    """Real episodes of the tiny model: the bf16 sampler's log-probs differ from the fp32 scorer's
    by rounding at top-p 1; renormalising over a nucleus raises every kept token's log-prob."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.llm.models import tiny_random_model
    from components.llm.transformers_backend import TransformersBackend
    from components.rollout import RolloutConfig
    from components.rollout.runner import CODE_STOPS
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.selection import play
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    model = tiny_random_model(tmp_path / "tiny", seed=0)
    with LadybugBackend(db) as graph:
        schema = graph.schema()
        qp = ReadOnlyQueryPath(graph, schema=schema)
        make_env = lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)  # noqa: E731
        rollout = RolloutConfig(max_turns=2, max_new_tokens=12, stops=CODE_STOPS, seed=1, temperature=0.7)
        records = play(
            TransformersBackend(model, threads=1), [{"prompt": "How many papers are there?"}], make_env, rollout, 2
        )
    full = logprob_gap(str(model), records, 0.7, 1.0, threads=1)
    nucleus = logprob_gap(str(model), records, 0.7, 0.8, threads=1)
    model_tokens = sum(sum(r.loss_mask) for r in records)
    assert full["tokens"] == model_tokens and full["outside_nucleus"] == 0
    assert 0.0 < full["mean_abs_diff"] < 1.0
    assert nucleus["tokens"] + nucleus["outside_nucleus"] == model_tokens
    assert nucleus["mean_diff"] > full["mean_diff"]
    # a float32 sampler (training in float32: the policy samples itself) differs only by the nucleus
    same = logprob_gap(str(model), records, 0.7, 1.0, threads=1, sampler_precision="float32")
    assert same["mean_abs_diff"] == pytest.approx(0.0, abs=1e-6) and same["sampler_precision"] == "float32"
    lines = report_lines(
        {
            "disagreement": answer_disagreement(records),
            "advantages": advantage_sizes([[0.0, 0.1]], [[0.0, 0.0]]),
            "logprobs": full,
        }
    )
    assert len(lines) == 6 and "sampler (bfloat16, top-p 1.0)" in lines[-1]
