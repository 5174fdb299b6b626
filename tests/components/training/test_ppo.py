"""PPO with a critic: GAE and both clipped losses against hand computations, environment tokens
never scored, a toy reward raised on the real tiny model through real multi-turn episodes, and the
checkpoint's value head saved and loaded back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from components.training.ppo import (
    PPOConfig,
    ValueHead,
    _forward,
    gae,
    load_value_head,
    policy_loss,
    run_ppo,
    sampling_logprobs,
    value_loss,
    whiten,
)
from tests.conftest import kill_once_written


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_gae_equals_a_hand_computed_example() -> None:
    adv, ret = gae(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.5, 0.2, 0.1]), gamma=1.0, lam=0.95)
    # δ2 = 1 − 0.1 = 0.9; δ1 = 0 + 0.1 − 0.2 = −0.1; δ0 = 0 + 0.2 − 0.5 = −0.3
    # A2 = 0.9; A1 = −0.1 + 0.95·0.9 = 0.755; A0 = −0.3 + 0.95·0.755 = 0.41725
    assert adv.tolist() == pytest.approx([0.41725, 0.755, 0.9])
    assert ret.tolist() == pytest.approx([0.91725, 0.955, 1.0])
    adv, _ = gae(torch.tensor([1.0, 2.0]), torch.zeros(2), gamma=0.5, lam=1.0)
    assert adv.tolist() == pytest.approx([2.0, 2.0])  # 1 + 0.5·2, 2
    assert whiten(torch.tensor([1.0, 3.0])).tolist() == pytest.approx([-1.0, 1.0])


def test_the_clipped_objective_and_value_loss_equal_hand_computations() -> None:
    logp = torch.log(torch.tensor([1.5, 0.5, 1.1]))  # ratios 1.5, 0.5, 1.1 against old log-probs 0
    old = torch.zeros(3)
    adv = torch.tensor([1.0, -2.0, 3.0])
    mask = torch.ones(3)
    loss, frac = policy_loss(logp, old, adv, mask, clip=0.2)
    # per token −min(ρA, clip(ρ)A): −min(1.5, 1.2) = −1.2; −min(−1.0, −1.6) = 1.6; −min(3.3, 3.3) = −3.3
    assert float(loss) == pytest.approx((-1.2 + 1.6 - 3.3) / 3)
    assert frac == pytest.approx(2 / 3)
    masked, _ = policy_loss(logp, old, adv, torch.tensor([1.0, 0.0, 1.0]), clip=0.2)
    assert float(masked) == pytest.approx((-1.2 - 3.3) / 2)  # a masked token adds nothing
    values, old_values, returns = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([2.0, -1.0])
    vl = value_loss(values, old_values, returns, torch.ones(2), clip=0.5)
    # token 0: max((1−2)², (0+0.5−2)²) = max(1, 2.25) = 2.25; token 1: max(1, 1) = 1 → ½·(2.25 + 1)/2
    assert float(vl) == pytest.approx(0.5 * (2.25 + 1.0) / 2)


def test_only_model_tokens_are_scored(tiny_model: Path) -> None:
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    head = ValueHead(model.config.hidden_size)
    torch.nn.init.normal_(head.linear.weight)
    prompt, completion, mask = [1, 2, 3, 4], [10, 11, 12, 13, 14, 15], [1, 1, 0, 0, 1, 0]
    rec = SimpleNamespace(prompt_ids=prompt, completion_ids=completion, loss_mask=mask)
    with torch.no_grad():
        full_softmax = PPOConfig(temperature=1.0, top_p=1.0, top_k=0)
        logp, values = _forward(model, head, rec, full_softmax)
        assert logp.shape == values.shape == (3,)  # one per model token
        # the environment's last token is context for nothing scored: changing it changes nothing
        other = SimpleNamespace(prompt_ids=prompt, completion_ids=completion[:-1] + [99], loss_mask=mask)
        logp2, values2 = _forward(model, head, other, full_softmax)
        assert torch.equal(logp, logp2) and torch.equal(values, values2)
        # a model token's log-prob is the model's own, read at the position before it
        full = torch.log_softmax(model(input_ids=torch.tensor([prompt + completion])).logits[0].float(), -1)
        assert float(logp[2]) == pytest.approx(float(full[len(prompt) + 3, completion[4]]), abs=1e-5)
        # sampled at top-p 0.8 / top-k 20, a token's log-prob is over that renormalised distribution: higher
        truncated, _ = _forward(model, head, rec, PPOConfig(temperature=1.0, top_p=0.8, top_k=20))
        assert bool((truncated >= logp - 1e-6).all()) and bool((truncated > logp).any())


def _library_env(tmp_path: Path):
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.tools.episodes import PythonCypherEnvironment
    from tests.components.tools.test_graph_cot import library_graph

    load_graph(library_graph(), tmp_path / "db")
    backend = LadybugBackend(tmp_path / "db")
    schema = backend.schema()
    qp = ReadOnlyQueryPath(backend, schema=schema)
    return backend, lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)


def test_ppo_raises_a_toy_reward_and_round_trips_its_value_head(tiny_model: Path, tmp_path: Path) -> None:
    """Reward = share of the model's own tokens (environment replies removed) with a small id (a
    random model starts near 0.2, as in the GRPO toy test); PPO over real two-turn Python + Cypher
    episodes pushes it up."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)

    def small_ids(completions, **_):
        out = []
        for text in completions:
            model_text = re.sub(r"<information>.*?</information>", "", text, flags=re.S)
            ids = tok(model_text, add_special_tokens=False)["input_ids"]
            out.append(sum(t < 5000 for t in ids) / max(1, len(ids)))
        return out

    backend, make_env = _library_env(tmp_path)
    rows = [{"question": f"Say something about paper {i}.", "answer": "x"} for i in range(8)]
    config = PPOConfig(
        steps=30, episodes_per_step=8, samples_per_question=4, minibatch=2, actor_lr=3e-2, critic_lr=1e-2, kl_coef=0.0,
        max_turns=2, max_new_tokens=12, top_k=0, top_p=1.0, temperature=1.0, threads=1, precision="float32",
    )  # fmt: skip
    try:
        result = run_ppo(tiny_model, rows, small_ids, make_env, tmp_path / "ppo", config, stops=("```\n", "</answer>"))
    finally:
        backend.close()
    first, last = sum(result.rewards[:5]) / 5, sum(result.rewards[-5:]) / 5
    assert result.steps == 30 and last > first + 0.1, result.rewards
    assert all(c["trained_episodes"] > 0 and c["value_loss"] >= 0 for c in result.curves)
    out = tmp_path / "ppo"
    assert (out / "value_head.safetensors").is_file() and (out / "config.json").is_file()
    head = load_value_head(out, 64)
    assert float(head.linear.weight.detach().abs().sum()) > 0  # the critic learned something and was saved
    again = load_value_head(out, 64)
    assert torch.equal(head.linear.weight, again.linear.weight)
    assert float(load_value_head(tiny_model, 64).linear.weight.abs().sum()) == 0  # no head saved: a fresh one


def test_sampling_logprobs_are_the_engines_truncated_distribution() -> None:
    """Top-k first, then the nucleus over the top-k's shares (kept: the most likely tokens until
    the mass before one exceeds top-p), renormalised; differentiable; a target outside the kept
    set stays finite unless asked otherwise."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]] * 4, requires_grad=True)
    targets = torch.tensor([0, 1, 2, 3])
    p = logits[0].detach().softmax(-1)
    out = sampling_logprobs(logits, targets, 1.0, top_p=0.9)
    kept = p[0] + p[1] + p[2]  # mass before the third 0.665 + 0.245 = 0.91 > 0.9: the fourth is dropped
    assert out[:3].tolist() == pytest.approx([float(torch.log(p[i] / kept)) for i in range(3)])
    assert float(out[3]) == pytest.approx(float(torch.log(p[3] / (kept + p[3]))))  # a kept target
    strict = sampling_logprobs(logits, targets, 1.0, top_p=0.9, keep_targets=False)
    assert float(strict[3]) == float("-inf")
    top2 = sampling_logprobs(logits, targets, 1.0, top_k=2, keep_targets=False)
    assert float(top2[0]) == pytest.approx(float(torch.log(p[0] / (p[0] + p[1])))) and float(top2[2]) == float("-inf")
    # shares after top-k: within the top 2, token 0 holds 0.73 > 0.5, so top-p 0.5 keeps it alone
    alone = sampling_logprobs(logits, targets, 1.0, top_p=0.5, top_k=2, keep_targets=False)
    assert float(alone[0]) == pytest.approx(0.0) and float(alone[1]) == float("-inf")
    full = sampling_logprobs(logits, targets, 2.0)
    assert full.tolist() == pytest.approx((logits[0].detach() / 2).log_softmax(-1).tolist())
    out[:3].sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_critic_warmup_and_the_best_validation_point(tiny_model: Path, tmp_path: Path) -> None:
    """Step 1 is the critic's warm-up: the value head learns, the policy does not move. The
    validation points score 0.1, 0.5, 0.2 (steps 0, 1, 2), so step 1 is kept: the saved policy is
    the start's (the warm-up never moved it) with the warmed-up value head — while the same run
    without a validation set saves step 2, whose policy moved."""
    from transformers import AutoModelForCausalLM

    from components.training.grpo import Validation

    schedule, seen = [0.1, 0.5, 0.2], []

    def reward(completions, answer=None, **_):
        if answer and answer[0] == "VAL":  # a validation point
            seen.append(schedule[len(seen)])
            return [seen[-1]] * len(completions)
        return [len(c) / 100 for c in completions]  # differs between episodes

    backend, make_env = _library_env(tmp_path)
    rows = [{"question": f"Say something about paper {i}.", "answer": "x"} for i in range(4)]
    held_out = [{"prompt": "How many papers are there?", "answer": "VAL"}]
    config = PPOConfig(
        steps=2, episodes_per_step=4, samples_per_question=2, actor_lr=3e-2, critic_lr=1e-2, kl_coef=0.0,
        max_turns=2, max_new_tokens=12, threads=1, precision="float32", critic_warmup=1,
    )  # fmt: skip
    stops = ("```\n", "</answer>")
    try:
        kept = run_ppo(
            tiny_model, rows, reward, make_env, tmp_path / "kept", config, stops=stops,
            validation=Validation(held_out, every=1, metric="reward"),
        )  # fmt: skip
        last = run_ppo(tiny_model, rows, reward, make_env, tmp_path / "last", config, stops=stops)
    finally:
        backend.close()
    assert seen == schedule and [v["step"] for v in kept.validation] == [0, 1, 2]
    assert (kept.chosen_step, last.chosen_step) == (1, 2)
    assert [c["critic_only"] for c in kept.curves] == [True, False]

    def weights(folder: Path) -> dict:
        return AutoModelForCausalLM.from_pretrained(folder).state_dict()

    start, saved, moved = weights(tiny_model), weights(tmp_path / "kept"), weights(tmp_path / "last")
    assert all(torch.equal(start[k], saved[k]) for k in start)
    assert not all(torch.equal(start[k], moved[k]) for k in start)
    assert float(load_value_head(tmp_path / "kept", 64).linear.weight.abs().sum()) > 0
    with pytest.raises(ValueError, match="critic_warmup"):
        PPOConfig(critic_warmup=-1)


def _resumable_ppo(model: str, work: str, out: str, stall_after: str | None = None):
    """Four PPO steps (float32) over the library graph with a validation point every step and a
    resumable state every 2 steps in ``work``. ``stall_after``: once that file exists, the reward
    never returns (the run hangs there until it is killed) — run in a child process."""
    import tempfile
    import time

    from components.training.grpo import Validation

    def reward(completions, **_):
        while stall_after is not None and Path(stall_after).exists():
            time.sleep(1)
        return [len(c) / 100 for c in completions]  # differs between episodes: the weights move

    backend, make_env = _library_env(Path(tempfile.mkdtemp()))
    rows = [{"question": f"Say something about paper {i}.", "answer": "x"} for i in range(4)]
    config = PPOConfig(
        steps=4, episodes_per_step=4, samples_per_question=2, actor_lr=3e-2, critic_lr=1e-2, kl_coef=0.01,
        max_turns=2, max_new_tokens=12, threads=1, precision="float32", save_every=2,
    )  # fmt: skip
    try:
        return run_ppo(
            model, rows, reward, make_env, out, config, stops=("```\n", "</answer>"),
            validation=Validation([{"prompt": "How many papers are there?", "answer": "3"}], every=1, metric="reward"),
            work_dir=work,
        )  # fmt: skip
    finally:
        backend.close()


def test_an_interrupted_ppo_run_resumes_where_it_stopped(tiny_model: Path, tmp_path: Path) -> None:
    """A PPO run killed (SIGKILL) during step 3 continues from its step-2 state and ends as the
    uninterrupted run does: the same curves (rewards of the same episodes, losses, KL), the same
    validation points and kept step, the same saved policy and value head."""

    from transformers import AutoModelForCausalLM

    from components.training.ppo import STATE_FILE

    whole = _resumable_ppo(str(tiny_model), str(tmp_path / "w1"), str(tmp_path / "o1"))
    assert whole.resumed_from is None and whole.steps == 4 and (tmp_path / "w1" / STATE_FILE).is_file()
    state = tmp_path / "w2" / STATE_FILE
    kill_once_written(_resumable_ppo, (str(tiny_model), str(tmp_path / "w2"), str(tmp_path / "o2"), str(state)), state)
    assert not (tmp_path / "o2" / "config.json").exists()  # stopped after step 2, nothing saved

    resumed = _resumable_ppo(str(tiny_model), str(tmp_path / "w2"), str(tmp_path / "o2"))
    assert resumed.resumed_from == 2 and resumed.steps == 4 and len(resumed.curves) == 4

    def curve(result, key):
        return [c[key] for c in result.curves]

    for key in ("reward", "policy_loss", "value_loss", "kl", "episodes"):
        assert curve(resumed, key) == pytest.approx(curve(whole, key), abs=1e-6), key
    assert [p["reward"] for p in resumed.validation] == [p["reward"] for p in whole.validation]
    assert resumed.chosen_step == whole.chosen_step
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "o2").state_dict()
    reference = AutoModelForCausalLM.from_pretrained(tmp_path / "o1").state_dict()
    start = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    assert all(torch.allclose(saved[k], reference[k], atol=1e-6) for k in reference)
    assert not all(torch.equal(saved[k], start[k]) for k in start) or whole.chosen_step == 0
    assert torch.allclose(
        load_value_head(tmp_path / "o2", 64).linear.weight,
        load_value_head(tmp_path / "o1", 64).linear.weight,
        atol=1e-6,
    )
