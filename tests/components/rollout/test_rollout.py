"""Multi-turn rollouts on the real Graph-CoT environment and graph: the loss mask, the exact-ids
continuation, the trajectory statistics, and the masked loss on a real tiny model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.rollout import RolloutConfig, RolloutRunner, TokenBackend, masked_nll
from components.tools.cot_env import GraphCoTEnvironment
from components.tools.graph_cot import GraphCoT
from components.tools.retriever import NodeIndex, shared_embedder
from tests.components.tools.test_graph_cot import library_graph
from tests.doubles import ScriptedBackend


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphCoT]:
    path = tmp_path_factory.mktemp("rollout") / "db"
    load_graph(library_graph(), path)
    with LadybugBackend(path) as backend:
        index = NodeIndex.open(backend, shared_embedder(threads=1), progress=False)
        yield GraphCoT(backend, index=index)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_scripted_episode_masks_every_environment_token(api: GraphCoT, tiny_model: Path) -> None:
    tok = AutoTokenizer.from_pretrained(tiny_model)
    steps = [
        "<think>find the paper</think>\n<graph>RetrieveNode[Attention Is All You Need]</graph>",
        "<think>its authors</think>\n<graph>NeighborCheck[p2, author]</graph>",
        "<think>first author's name</think>\n<graph>NodeFeature[ann, name]</graph>",
        "<think>done</think>\n<answer>Ann Lee</answer>",
    ]
    backend = ScriptedBackend(steps, tokenizer=tok)
    assert isinstance(backend, TokenBackend)
    runner = RolloutRunner(backend, lambda: GraphCoTEnvironment(api), RolloutConfig(max_turns=8))
    (rec,) = runner.run([{"question": "Who wrote 'Attention Is All You Need'?", "answer": "Ann Lee"}])
    assert len(rec.completion_ids) == len(rec.loss_mask) > 0
    segs = rec.segments()
    assert [m for m, _ in segs] == [1, 0, 1, 0, 1, 0, 1]  # model, env, model, env, model, env, answer
    for mask, ids in segs:
        text = tok.decode(ids)
        if mask == 0:
            assert text.strip().startswith("<information>") and text.strip().endswith("</information>")
        else:
            assert "<information>" not in text and text.startswith("<think>")
    # each turn continued from exactly the ids of the trajectory so far
    for k, prompt in enumerate(backend.prompts):
        prefix = rec.prompt_ids + rec.completion_ids
        assert prompt == prefix[: len(prompt)]
        assert k == 0 or len(prompt) > len(backend.prompts[k - 1])
    s = rec.stats
    assert s.answered and s.answer == "Ann Lee" and s.valid_format and not s.halted and not s.truncated
    assert (s.rounds, s.valid_calls, s.invalid_calls) == (3, 3, 0)
    assert (s.s_rounds, s.e_rounds, s.level) == (1, 1, "medium")  # p2 | ann, bob | (a feature: no node)
    assert s.evidence_hit is True
    assert s.model_tokens == sum(len(ids) for m, ids in segs if m) and s.env_tokens == sum(
        len(ids) for m, ids in segs if not m
    )


def test_tiny_random_model_rollouts_end_with_a_recorded_halt(api: GraphCoT, tiny_model: Path) -> None:
    """A random model writes no valid step: every turn is an invalid format, the environment's
    loop limit halts it, and nothing it did is counted as a valid call."""
    from components.llm.transformers_backend import TransformersBackend

    llm = TransformersBackend(tiny_model, threads=1)
    try:
        runner = RolloutRunner(
            llm, lambda: GraphCoTEnvironment(api, max_rounds=2), RolloutConfig(max_turns=6, max_new_tokens=12, seed=3)
        )
        recs = runner.run([{"question": "Who wrote p2?", "answer": "Ann Lee"}], n=2)
    finally:
        llm.close()
    assert len(recs) == 2
    for rec in recs:
        s = rec.stats
        assert s.halted and not s.answered and not s.valid_format and s.valid_calls == 0
        assert s.model_tokens > 0 and s.env_tokens > 0 and s.level in ("easy", "medium", "hard")
        assert set(rec.loss_mask) == {0, 1} and rec.trace["halted"] is True
    assert recs[0].completion_ids != recs[1].completion_ids  # two samples, two seeds


def test_episodes_played_in_chunks_match_one_batch_and_reuse_the_cache(api: GraphCoT, tiny_model: Path) -> None:
    """Chunks bound the engine's working set: greedy episodes come out the same whether they play
    as one batch or two at a time, and a chunk forwards each history once (no re-prefill)."""
    from components.llm.transformers_backend import TransformersBackend

    rows = [{"question": q, "answer": "Ann Lee"} for q in ("Who wrote p2?", "Who wrote p1?", "Name an author.")]
    out, forwarded = {}, {}
    for chunk in (64, 2):
        llm = TransformersBackend(tiny_model, threads=1)
        try:
            config = RolloutConfig(max_turns=3, max_new_tokens=8, temperature=0, chunk=chunk)
            recs = RolloutRunner(llm, lambda: GraphCoTEnvironment(api, max_rounds=3), config).run(rows, n=2)
            out[chunk] = [r.completion_ids for r in recs]
            forwarded[chunk] = llm.engine.forwarded_tokens
            total = sum(len(r.prompt_ids) + len(r.completion_ids) for r in recs)
        finally:
            llm.close()
        assert len(recs) == 6 and forwarded[chunk] <= total  # nothing forwarded twice
    assert out[64] == out[2]
    with pytest.raises(ValueError, match="chunk"):
        RolloutRunner(ScriptedBackend([]), lambda: GraphCoTEnvironment(api), RolloutConfig(chunk=0)).run(rows[:1])


def test_a_sampled_episode_plays_the_same_wherever_it_runs(api: GraphCoT, tiny_model: Path) -> None:
    """Sampling is seeded per episode (its index in the run plus ``first``), not per position in
    a batch: the same 6 episodes played as one run, in chunks of 2, without the last question, or
    as three runs of one question each (each told where it starts: one process's share of a
    multi-process GRPO batch) sample the same tokens; another seed samples others."""
    from components.llm.transformers_backend import TransformersBackend

    rows = [{"question": q, "answer": "Ann Lee"} for q in ("Who wrote p2?", "Who wrote p1?", "Name an author.")]
    llm = TransformersBackend(tiny_model, threads=1, dtype="float32")
    try:

        def play(part: list[dict], chunk: int = 64, first: int = 0, seed: int = 5) -> list[list[int]]:
            config = RolloutConfig(max_turns=3, max_new_tokens=8, seed=seed, chunk=chunk)
            runner = RolloutRunner(llm, lambda: GraphCoTEnvironment(api, max_rounds=3), config)
            return [r.completion_ids for r in runner.run(part, n=2, first=first)]

        whole = play(rows)
        assert play(rows, chunk=2) == whole
        assert play(rows[:2]) == whole[:4]
        assert play(rows[:1]) + play(rows[1:2], first=2) + play(rows[2:], first=4) == whole
        assert play(rows, seed=6) != whole
    finally:
        llm.close()


def test_masked_tokens_are_never_targets(tiny_model: Path) -> None:
    """Changing a token under loss_mask = 0 leaves the loss unchanged; changing a model token
    changes it (the changed environment token is the last one, so it conditions nothing)."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    prompt = [1, 5, 9, 13]
    completion = [21, 22, 23, 40, 41, 42]
    mask = [1, 1, 1, 0, 0, 0]
    with torch.no_grad():
        base = masked_nll(model, prompt, completion, mask)
        env_changed = masked_nll(model, prompt, completion[:-1] + [99], mask)
        model_changed = masked_nll(model, prompt, [21, 77, 23, 40, 41, 42], mask)
        unmasked = masked_nll(model, prompt, completion[:-1] + [99], [1] * 6)
    assert env_changed.item() == pytest.approx(base.item(), abs=1e-6)
    assert abs(model_changed.item() - base.item()) > 1e-4
    assert abs(unmasked.item() - masked_nll(model, prompt, completion, [1] * 6).item()) > 1e-4
    with pytest.raises(ValueError):
        masked_nll(model, prompt, completion, [0] * 6)
