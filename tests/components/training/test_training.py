"""Preference-pair ranking on crafted trajectories; the masked SFT warm-start on a real tiny model."""

from __future__ import annotations

import doctest
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM

from components.rollout import RolloutConfig, masked_nll
from components.rollout.runner import CODE_STOPS
from components.training import build_pair, pairs, rank_key, run_sft, sft, sft_example
from components.training.sft import SFTRunConfig
from tests.conftest import kill_once_written


@pytest.mark.parametrize("module", [pairs, sft])
def test_docstring_examples(module) -> None:
    failures, tried = doctest.testmod(module)
    assert tried > 0 and failures == 0


def traj(answer=None, eh=False, vf=True, halted=False, invalid=0, rounds=1):
    return SimpleNamespace(
        answer=answer, evidence_hit=eh, valid_format=vf, halted=halted, invalid_calls=invalid, rounds=rounds
    )


def test_six_key_ranking_priority() -> None:
    gold = "Ann Lee"
    # each pair differs in one key; the earlier key decides even against every later one
    better_em = traj("ann lee", eh=False, vf=False, halted=True, invalid=5, rounds=9)
    worse_em = traj("Bob", eh=True, vf=True, halted=False, invalid=0, rounds=1)
    assert rank_key(better_em, gold) > rank_key(worse_em, gold)
    assert rank_key(traj("x", eh=True, vf=False, rounds=9), gold) > rank_key(
        traj("x", eh=False, vf=True, rounds=1), gold
    )
    assert rank_key(traj("x", vf=True, halted=True), gold) > rank_key(traj("x", vf=False), gold)
    assert rank_key(traj("x", halted=False, invalid=3), gold) > rank_key(traj("x", halted=True, invalid=0), gold)
    assert rank_key(traj("x", invalid=0, rounds=9), gold) > rank_key(traj("x", invalid=1, rounds=1), gold)
    assert rank_key(traj("x", rounds=2), gold) > rank_key(traj("x", rounds=3), gold)
    assert rank_key(traj(None), gold)[0] == 0.0  # no answer: EM 0


def test_best_vs_worst_and_dropped_pools() -> None:
    gold = "Ann Lee"
    pool = [
        traj("Bob", rounds=2),
        traj("Ann Lee", rounds=4),
        traj("Ann Lee", rounds=2),
        traj(None, vf=False, halted=True),
    ]
    out = build_pair(pool, gold)
    assert (out.chosen, out.rejected, out.dropped) == (2, 3, None)
    assert build_pair([traj("Ann Lee"), traj("ann lee")], gold).dropped == "uniformly_perfect"
    assert build_pair([traj("Bob", vf=False), traj(None, vf=False)], gold).dropped == "uniformly_failed"
    assert build_pair([traj("Bob"), traj("Bob")], gold).dropped == "tied"
    assert build_pair([traj("Bob")], gold).dropped == "too_few"
    # ties are broken by sample order: earliest chosen, latest rejected
    out = build_pair([traj("Bob"), traj("Ann Lee"), traj("Ann Lee"), traj("Bob")], gold)
    assert (out.chosen, out.rejected) == (1, 3)
    # set answers compare as sets
    assert build_pair([traj("b; a"), traj("c")], ["a", "b"], "set").chosen == 0


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


#: one trajectory: a prompt, then model tokens with three environment tokens masked in between
TOY = ([1, 5, 9, 13], [21, 22, 23, 40, 41, 42, 24, 25], [1, 1, 1, 0, 0, 0, 1, 1])


def toy_sft(tiny_model: Path) -> tuple:
    """``(the untrained model, 8 copies of TOY as SFT examples, its masked loss before training)``."""
    torch.set_num_threads(1)
    examples = [sft_example(*TOY)] * 8
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    with torch.no_grad():
        before = masked_nll(model, *TOY).item()
    return model, examples, before


def test_sft_lowers_the_loss_and_honours_the_mask(
    tiny_model: Path, tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    _, examples, before = toy_sft(tiny_model)
    prompt, completion, mask = TOY
    result = run_sft(tiny_model, examples, tmp_path / "out", SFTRunConfig(max_steps=15, batch_size=4, threads=1))
    # the trainer's first loss is exactly our masked loss: environment tokens were not targets
    assert result.first_loss == pytest.approx(before, rel=1e-3)
    assert result.steps == 15 and result.last_loss < result.first_loss - 0.5
    progress = [line for line in capfd.readouterr().err.splitlines() if line.startswith("[")]
    assert len(progress) == 15 and progress[-1].startswith("[sft] step 15/15: loss ")  # one line a step
    trained = AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
    with torch.no_grad():
        after = masked_nll(trained, prompt, completion, mask).item()
    assert after < before - 0.5
    with pytest.raises(ValueError, match="no model token"):
        run_sft(tiny_model, [sft_example(prompt, completion, [0] * 8)], tmp_path / "x")


def test_lora_sft_trains_adapters_and_saves_merged_weights(tiny_model: Path, tmp_path: Path) -> None:
    """LoRA (peft) on the real tiny model: the same masked loss falls, only adapter weights move
    during training, and the saved folder is a plain model (adapters merged) that loads without
    peft and scores the lowered loss; the time budget ends training after the step in flight."""
    model, examples, before = toy_sft(tiny_model)
    prompt, completion, mask = TOY
    config = SFTRunConfig(max_steps=15, batch_size=4, threads=1, learning_rate=5e-3, lora={"r": 8, "alpha": 16})
    result = run_sft(tiny_model, examples, tmp_path / "lora", config)
    assert result.steps == 15 and result.first_loss == pytest.approx(before, rel=1e-3)
    assert result.last_loss < result.first_loss - 0.5
    out = tmp_path / "lora"
    assert not (out / "adapter_config.json").exists() and (out / "config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        after = masked_nll(merged, prompt, completion, mask).item()
    assert after == pytest.approx(result.last_loss, abs=0.5) and after < before - 0.5
    # the embedding matrix is not adapted: it is exactly the base model's
    assert torch.equal(merged.get_input_embeddings().weight, model.get_input_embeddings().weight)
    with pytest.raises(ValueError, match="unknown LoRA options"):
        run_sft(tiny_model, examples, tmp_path / "bad", SFTRunConfig(max_steps=1, lora={"rank": 8}))
    timed = run_sft(tiny_model, examples, tmp_path / "timed", SFTRunConfig(max_steps=50, batch_size=4, max_seconds=0))
    assert timed.steps == 1  # a zero budget still completes the first step, then stops


def test_training_keeps_float32_master_weights_of_a_bfloat16_checkpoint(tiny_model: Path, tmp_path: Path) -> None:
    """A checkpoint saved in bfloat16 (as Qwen2.5's are) trains from float32 weights: one SFT
    step at lr 1e-6 moves weights by ~1e-6 — far below bfloat16's rounding step at their size —
    and the moves are kept (in bfloat16 every one of them would round away)."""
    half = tmp_path / "bf16"
    AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.bfloat16).save_pretrained(half)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(half)
    _, examples, _ = toy_sft(tiny_model)
    config = SFTRunConfig(max_steps=1, batch_size=4, threads=1, learning_rate=1e-6, precision="float32")
    run_sft(half, examples, tmp_path / "out", config)
    start = AutoModelForCausalLM.from_pretrained(half, dtype=torch.float32).state_dict()
    trained = AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=torch.float32).state_dict()
    weight = "model.layers.0.mlp.down_proj.weight"
    moved = (trained[weight] - start[weight]).abs()
    assert trained[weight].dtype == torch.float32 and (tmp_path / "out" / "config.json").is_file()
    assert 0 < moved.max().item() < 1e-5 and (moved > 0).float().mean().item() > 0.5


def test_shared_prefix_gives_the_same_loss_and_gradients(tiny_model: Path, tmp_path: Path) -> None:
    """The common prompt run once and its keys / values repeated per row: on a right-padded
    batch of three trajectories the loss and every weight's gradient equal the full computation;
    a batch without a common prefix falls back to it; training with it lowers the loss."""
    from components.training.sft import shared_prefix, span_loss

    torch.manual_seed(0)
    prefix = list(range(3, 40))
    rows = [
        sft_example(prefix + [50, 51], [60, 61, 62, 70, 71, 63], [1, 1, 1, 0, 0, 1]),
        sft_example(prefix + [52], [64, 65, 72, 66], [1, 1, 0, 1]),
        sft_example(prefix + [53, 54, 55], [67, 68], [1, 1]),
    ]
    width = max(len(r["input_ids"]) for r in rows)
    pad = lambda xs, v: [x + [v] * (width - len(x)) for x in xs]  # noqa: E731
    batch = {
        "input_ids": torch.tensor(pad([r["input_ids"] for r in rows], 0)),
        "labels": torch.tensor(pad([r["labels"] for r in rows], -100)),
        "attention_mask": torch.tensor(pad([[1] * len(r["input_ids"]) for r in rows], 0)),
    }
    assert shared_prefix(batch["input_ids"], batch["labels"], batch["attention_mask"]) == len(prefix) - 1

    def same_loss_and_gradients(m) -> dict[str, torch.Tensor]:
        """Asserts the shared-prefix loss and gradients of ``m`` equal the full computation's;
        returns the full computation's gradients by parameter name."""
        grads = []
        for share in (False, True):
            m.zero_grad()
            loss = span_loss(m, batch, share_prefix=share)
            loss.backward()
            grads.append((loss.item(), {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}))
        (full, g_full), (shared, g_shared) = grads
        assert shared == pytest.approx(full, rel=1e-5) and g_full and g_full.keys() == g_shared.keys()
        for name, g in g_full.items():
            assert torch.allclose(g, g_shared[name], atol=1e-5, rtol=1e-4), name
        return g_full

    model = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="eager").float()
    same_loss_and_gradients(model)
    one = {k: v[:1] for k, v in batch.items()}
    assert shared_prefix(one["input_ids"], one["labels"]) == 0
    assert span_loss(model, one, share_prefix=True).item() == pytest.approx(span_loss(model, one).item(), rel=1e-6)
    config = SFTRunConfig(max_steps=10, batch_size=3, share_prefix=True)
    result = run_sft(tiny_model, rows * 4, tmp_path / "shared", config)
    assert result.last_loss < result.first_loss - 0.5
    # with LoRA adapters (the demo's Solver trains that way) the loss and the adapters' gradients
    # are the same too
    from components.training.sft import lora_model

    torch.manual_seed(1)
    adapted = lora_model(AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="eager").float(), {})
    for module in adapted.modules():  # peft starts B at zero: give it values so every gradient flows
        if hasattr(module, "lora_B"):
            torch.nn.init.normal_(module.lora_B["default"].weight, std=0.02)
    assert all("lora_" in name for name in same_loss_and_gradients(adapted))


def test_grpo_raises_a_shaped_toy_reward(tiny_model: Path, tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    """Reward = share of completion tokens with a small id: a random model starts near 0.1; GRPO
    on the real tiny model pushes the mean reward up within a few dozen steps."""
    from components.training.grpo import GRPORunConfig, run_grpo

    def small_ids(completions, completion_ids, **_):
        return [sum(t < 5000 for t in ids) / max(len(ids), 1) for ids in completion_ids]

    rows = [{"prompt": f"Question {i}: say something"} for i in range(64)]
    cfg = GRPORunConfig(
        max_steps=40, learning_rate=3e-2, batch_size=8, num_generations=4, max_completion_length=16, beta=0.0, threads=1
    )
    result = run_grpo(tiny_model, rows, [small_ids], tmp_path / "grpo", cfg)
    first, last = sum(result.rewards[:5]) / 5, sum(result.rewards[-5:]) / 5
    assert result.steps == 40 and len(result.rewards) == 40
    assert "[grpo] step 40/40: loss " in capfd.readouterr().err
    assert last > first + 0.3, result.rewards


def test_multi_turn_grpo_masks_environment_tokens(
    tiny_model: Path, tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    """GRPO through TRL's rollout_func with the real Graph-CoT environment: the completions the
    rewards see contain the environment's tokens, while TRL counts (and trains on) the model's
    tokens only — env_mask reached it."""
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.rollout import RolloutConfig
    from components.rubric.rewards import graphdancer_reward
    from components.tools.cot_env import GraphCoTEnvironment
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder
    from components.training.grpo import GRPORunConfig, MultiTurn, run_grpo
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    seen: dict[str, list] = {"lengths": [], "valid_format": []}

    def spy(completions, completion_ids, valid_format, **kwargs):
        seen["lengths"] += [len(ids) for ids in completion_ids]
        seen["valid_format"] += list(valid_format)
        return graphdancer_reward(completions, valid_format=valid_format, **kwargs)

    with LadybugBackend(db) as backend:
        api = GraphCoT(backend, index=NodeIndex.open(backend, shared_embedder(threads=1), progress=False))
        mt = MultiTurn(lambda: GraphCoTEnvironment(api, max_rounds=2), RolloutConfig(max_turns=3, max_new_tokens=12))
        rows = [
            {"prompt": "Who wrote p2?", "answer": "Ann Lee"},
            {"prompt": "Which venue published p1?", "answer": "KDD"},
        ]
        cfg = GRPORunConfig(
            max_steps=2, batch_size=4, num_generations=2, learning_rate=1e-3, max_completion_length=256, threads=1
        )
        result = run_grpo(tiny_model, rows * 2, [spy], tmp_path / "mt", cfg, multi_turn=mt)
    assert result.steps == 2 and len(seen["lengths"]) == 8 and seen["valid_format"] == [False] * 8
    logged_max = max(h["completions/max_length"] for h in result.log if "completions/max_length" in h)
    assert logged_max <= 3 * 12 < max(seen["lengths"])  # model tokens only vs model + environment
    progress = [line for line in capfd.readouterr().err.splitlines() if line.startswith("[grpo] step")]
    assert len(progress) == 2 and "tool call rate 0.00" in progress[-1] and "valid format 0.00" in progress[-1]


def test_dpo_raises_the_margin_and_scores_model_tokens_only(tiny_model: Path, tmp_path: Path) -> None:
    from components.rollout import completion_logprobs
    from components.training.dpo import DPORunConfig, preference_example, run_dpo

    prompt = [1, 5, 9, 13]
    chosen, chosen_mask = [21, 22, 23, 40, 41, 24], [1, 1, 1, 0, 0, 1]
    rejected, rejected_mask = [30, 31, 40, 41, 32], [1, 1, 0, 0, 1]
    pairs = [preference_example(prompt, (chosen, chosen_mask), (rejected, rejected_mask))] * 8
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    with torch.no_grad():
        lp = completion_logprobs(model, prompt, chosen)
    masked_sum = float((lp * torch.tensor(chosen_mask, dtype=torch.float32)).sum())
    full_sum = float(lp.sum())
    result = run_dpo(
        tiny_model, pairs, tmp_path / "dpo", DPORunConfig(max_steps=10, learning_rate=1e-3, batch_size=4, threads=1)
    )
    first = result.log[0]
    # the first step scores the untouched policy: its chosen log-probability sums model tokens only
    assert first["logps/chosen"] == pytest.approx(masked_sum, rel=1e-3)
    assert abs(first["logps/chosen"] - full_sum) > 0.5
    assert result.rewards[0] == pytest.approx(0.0, abs=1e-6)  # policy == reference at the start
    assert result.rewards[-1] > 0.3 and result.losses[-1] < result.losses[0]
    with pytest.raises(ValueError, match="model tokens"):
        preference_example(prompt, (chosen, [0] * 6), (rejected, rejected_mask))


def test_graphcert_grpo_over_the_python_cypher_sandbox(tiny_model: Path, tmp_path: Path) -> None:
    """GraphCert's setting: multi-turn GRPO in the Python + Cypher environment (real sandbox) with
    the graphcert reward; the rollout's marked queries reach the reward as pred_evidence, the gold
    evidence comes from the dataset column."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.rollout import RolloutConfig
    from components.rollout.runner import CODE_STOPS
    from components.rubric.rewards import graphcert_reward
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.grpo import GRPORunConfig, MultiTurn, run_grpo
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    seen: dict[str, list] = {"pred_evidence": [], "rewards": []}

    def spy(completions, pred_evidence, **kwargs):
        seen["pred_evidence"] += list(pred_evidence)
        out = graphcert_reward(completions, pred_evidence=pred_evidence, **kwargs)
        seen["rewards"] += out
        return out

    gold = ["MATCH (a:Author)-[:WROTE]->(p:Paper {id: $id}) RETURN a.name"]
    rows = [{"prompt": "Who wrote p2?", "answer": "Ann Lee, Bob Stone", "evidence_queries": gold}] * 4
    with LadybugBackend(db) as backend:
        schema = backend.schema()
        qp = ReadOnlyQueryPath(backend, schema=schema)
        mt = MultiTurn(
            lambda: PythonCypherEnvironment(qp, schema, max_rounds=1),
            RolloutConfig(max_turns=2, max_new_tokens=12, stops=CODE_STOPS),
        )
        result = run_grpo(
            tiny_model,
            rows,
            [spy],
            tmp_path / "gc",
            GRPORunConfig(max_steps=1, batch_size=4, num_generations=2, max_completion_length=512, threads=1),
            multi_turn=mt,
        )
    assert result.steps == 1 and len(seen["pred_evidence"]) == 4
    assert all(isinstance(e, list) for e in seen["pred_evidence"])
    assert seen["rewards"] == [0.0] * 4  # a random model never answers: unparseable → 0


def test_validation_curve_plays_the_current_policy_on_held_out_rows(tiny_model: Path, tmp_path: Path) -> None:
    """The validation curve: the held-out rows played before training and after every step by the
    policy being trained, the same seed each time — step 0 equals playing the starting model
    separately; the training groups never enter it; the non-zero-advantage share is logged."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.llm.transformers_backend import TransformersBackend
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.grpo import Validation
    from components.training.selection import play
    from components.training.stages import curves
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    calls: list[tuple[bool, str]] = []

    def length(completions, **kwargs):  # a reward that differs between episodes
        calls.extend(("trainer_state" in kwargs, a) for a in kwargs["answer"])  # TRL's calls carry its state
        return [len(c) / 100 for c in completions]

    held_out = [{"prompt": "How many papers are there?", "answer": "3"}, {"prompt": "Who wrote p1?", "answer": "x"}]
    rows = [{"prompt": "Who wrote p2?", "answer": "Ann Lee, Bob Stone"}] * 4
    with LadybugBackend(db) as backend:
        schema = backend.schema()
        qp = ReadOnlyQueryPath(backend, schema=schema)
        make_env = lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)  # noqa: E731
        # both sides in float32: a bfloat16-loaded model and bf16 autocast over float32 weights
        # round differently, which would make the comparison about precision, not the curve
        start = play(TransformersBackend(tiny_model, threads=1, dtype="float32"), held_out, make_env, TINY_ROLLOUT, 2)
    result = _tiny_grpo(tiny_model, db, rows, length, tmp_path / "gc", Validation(held_out, every=1, samples=2))
    assert [v["step"] for v in result.validation] == [0, 1, 2]
    assert all(v["episodes"] == 4 for v in result.validation)
    assert result.validation[0]["reward"] == pytest.approx(sum(len(r.completion_text) / 100 for r in start) / 4)
    # the trainer's reward calls saw only training rows; the validation's only held-out ones
    assert {a for trainer, a in calls if trainer} == {"Ann Lee, Bob Stone"}
    assert {a for trainer, a in calls if not trainer} == {"3", "x"}
    steps = curves(result.log, result.rollouts)
    assert len(steps) == 2 and all(0.0 <= c["nonzero_advantage"] <= 1.0 for c in steps)


def test_span_scoring_equals_full_scoring_on_the_model_tokens(tiny_model: Path) -> None:
    """GRPO's training pass projects only the model's tokens through the LM head: at those
    positions the log-probabilities (and their gradients) equal the full computation's; the
    environment positions are 0 and never scored."""
    from components.rollout.loss import completion_logprobs
    from components.training.grpo import span_logps

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    prompt, completion = [5, 17, 42, 8], [100, 101, 102, 200, 201, 103, 104]
    scored = torch.tensor([[1, 1, 1, 0, 0, 1, 1]])
    ids = torch.tensor([prompt + completion])
    logps, entropy = span_logps(model, ids, torch.ones_like(ids), len(completion), scored)
    full = completion_logprobs(model, prompt, completion)
    assert torch.allclose(logps[0][scored[0].bool()], full[scored[0].bool()], atol=1e-5)
    assert torch.equal(logps[0][~scored[0].bool()], torch.zeros(2)) and torch.all(entropy[0][scored[0].bool()] > 0)
    (logps.sum()).backward()
    grad_span = model.get_output_embeddings().weight.grad.clone()
    model.zero_grad()
    (full * scored[0]).sum().backward()
    assert torch.allclose(grad_span, model.get_output_embeddings().weight.grad, atol=1e-5)


#: the tiny model's multi-turn rollouts in these tests: two turns of 12 tokens, seeded
TINY_ROLLOUT = RolloutConfig(max_turns=2, max_new_tokens=12, stops=CODE_STOPS, seed=3)


def _tiny_grpo(model, db, rows, reward, out, validation, *, steps: int = 2, save_every: int = 0, work=None):
    """Multi-turn GRPO of ``model`` in the Python + Cypher sandbox over the graph at ``db``:
    float32, lr 1e-3 (the weights move), 4 completions a step (2 per question), ``TINY_ROLLOUT``."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.tools.episodes import PythonCypherEnvironment
    from components.training.grpo import GRPORunConfig, MultiTurn, run_grpo

    config = GRPORunConfig(
        max_steps=steps,
        batch_size=4,
        num_generations=2,
        max_completion_length=512,
        threads=1,
        learning_rate=1e-3,
        precision="float32",
        save_every=save_every,
    )
    with LadybugBackend(db) as graph:
        schema = graph.schema()
        qp = ReadOnlyQueryPath(graph, schema=schema)
        make_env = lambda: PythonCypherEnvironment(qp, schema, max_rounds=1)  # noqa: E731
        multi = MultiTurn(make_env, TINY_ROLLOUT, validation=validation)
        return run_grpo(model, rows, [reward], out, config, multi_turn=multi, work_dir=work)


def _grpo_keeping_best(tiny_model: Path, tmp_path: Path, schedule: list[float], keep_best: bool = True):
    """Two GRPO steps (lr 1e-3: the weights move) whose validation points score ``schedule``
    (steps 0, 1, 2) while the training reward varies between episodes; ``(result, saved weights)``."""
    from components.graph.load import load_graph
    from components.training.grpo import Validation
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    points: list[float] = []

    def reward(completions, **kwargs):
        if "trainer_state" in kwargs:  # TRL's calls: a reward that differs between episodes
            return [len(c) / 100 for c in completions]
        points.append(schedule[len(points)])  # a validation point
        return [points[-1]] * len(completions)

    held_out = [{"prompt": "How many papers are there?", "answer": "3"}]
    rows = [{"prompt": "Who wrote p2?", "answer": "Ann Lee, Bob Stone"}] * 4
    spec = Validation(held_out, every=1, metric="reward", keep_best=keep_best)
    result = _tiny_grpo(tiny_model, db, rows, reward, tmp_path / "out", spec)
    assert points == schedule
    return result, AutoModelForCausalLM.from_pretrained(tmp_path / "out").state_dict()


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_grpo_keeps_the_best_validation_point(tiny_model: Path, tmp_path: Path) -> None:
    """The saved weights are the best validation point's: the start's when no later point is
    strictly better (a tie keeps the earlier), a middle step's when it peaks there — not the last
    step's, which ``keep_best=False`` saves; the model card and summary say which step."""
    from components.training.checkpoint import CheckpointResult, model_card

    start = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    flat, flat_saved = _grpo_keeping_best(tiny_model, tmp_path / "flat", [0.5, 0.5, 0.1])
    assert flat.chosen_step == 0 and _same(flat_saved, start)
    peak, peak_saved = _grpo_keeping_best(tiny_model, tmp_path / "peak", [0.1, 0.5, 0.2])
    last, last_saved = _grpo_keeping_best(tiny_model, tmp_path / "last", [0.1, 0.5, 0.2], keep_best=False)
    assert peak.chosen_step == 1 and last.chosen_step == 2
    assert not list(tmp_path.rglob(".best-point*"))  # the spilled point goes with the run
    assert not _same(peak_saved, start) and not _same(peak_saved, last_saved) and not _same(last_saved, start)
    assert [v["step"] for v in peak.validation] == [0, 1, 2] and all("em" in v for v in peak.validation)
    # each point keeps every episode's result, so two points pair question by question
    assert all(len(v["correct"]) == len(v["answer_types"]) == v["episodes"] > 0 for v in peak.validation)

    card = CheckpointResult("out", "base", validation=flat.validation, chosen_step=0, method="graphcert-grpo")
    assert card.summary()["improved"] is False and card.summary()["chosen_step"] == 0
    assert "did not improve on its starting checkpoint" in model_card(
        card, data_fingerprint="f", domain="d", method_text="GRPO"
    )
    assert CheckpointResult("out", "base", validation=peak.validation, chosen_step=1).improved is True
    assert CheckpointResult("out", "base").improved is None  # no validation curve chose anything


def test_a_spilled_best_point_is_a_snapshot_read_back_from_its_file(tiny_model: Path, tmp_path: Path) -> None:
    """With ``spill`` the kept weights live in a file, mapped, not in a copy in memory: they are
    the weights as they were when offered (training on afterwards does not change them), a
    better point replaces them, a worse one does not, and ``finish`` restores them and removes
    the file; ``drop_cache`` empties a backend's prefix cache and ignores one without."""
    from components.training.grpo import BestPoint, Validation, drop_cache

    layer = torch.nn.Linear(3, 2)
    best = BestPoint(Validation([{"prompt": "q"}], metric="reward"), spill=tmp_path)
    best.offer({"step": 0, "reward": 0.2}, {"": layer})
    with torch.no_grad():
        layer.weight.add_(1.0)
    at_one = layer.weight.detach().clone()
    best.offer({"step": 1, "reward": 0.5}, {"": layer})
    with torch.no_grad():
        layer.weight.add_(1.0)
    best.offer({"step": 2, "reward": 0.4}, {"": layer})  # worse: not kept
    assert best.step == 1 and best.spill_file is not None and best.spill_file.is_file()
    with torch.no_grad():
        layer.weight.mul_(0.0)  # whatever training does after the point
    assert best.finish(2, {"": layer}) == 1
    assert torch.equal(layer.weight, at_one) and not list(tmp_path.glob(".best-point*"))

    from transformers import AutoTokenizer

    from components.llm.base import SamplingParams
    from components.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend.wrap(
        AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    )
    backend.generate_ids([[1, 2, 3, 4]], SamplingParams(max_new_tokens=4, temperature=0))
    assert len(backend.engine.cache) > 0
    drop_cache(backend)
    assert len(backend.engine.cache) == 0
    drop_cache(SimpleNamespace())  # a backend without an engine (vLLM's): nothing to do


def _resumable_grpo(model: str, db: str, work: str, out: str, stall_after: str | None = None):
    """Four multi-turn GRPO steps (float32, lr 1e-3) with a validation point every step and a
    resumable checkpoint every 2 in ``work``. ``stall_after``: once that file exists, the reward
    never returns (the run hangs there until it is killed) — run in a child process."""
    import time

    from components.training.grpo import Validation

    def reward(completions, **kwargs):
        while stall_after is not None and Path(stall_after).exists():
            time.sleep(1)
        return [len(c) / 100 for c in completions]  # differs between episodes: the weights move

    rows = [{"prompt": f"Who wrote p{i % 3 + 1}?", "answer": "Ann Lee"} for i in range(8)]
    held_out = [{"prompt": "How many papers are there?", "answer": "3"}]
    spec = Validation(held_out, every=1, metric="reward")
    return _tiny_grpo(model, db, rows, reward, out, spec, steps=4, save_every=2, work=work)


def test_an_interrupted_grpo_run_resumes_where_it_stopped(tiny_model: Path, tmp_path: Path) -> None:
    """A run killed (SIGKILL) during step 3 continues from its step-2 checkpoint and ends as the
    uninterrupted run does: the same rollouts in the same order (history), the same losses, the
    same validation curve and kept point, the same saved weights."""

    from components.graph.load import load_graph
    from components.training.grpo import RUN_STATE_FILE
    from tests.components.tools.test_graph_cot import library_graph

    db = tmp_path / "db"
    load_graph(library_graph(), db)
    whole = _resumable_grpo(str(tiny_model), str(db), str(tmp_path / "w1"), str(tmp_path / "o1"))
    assert whole.resumed_from is None and whole.steps == 4

    state = tmp_path / "w2" / "checkpoint-2" / RUN_STATE_FILE
    args = (str(tiny_model), str(db), str(tmp_path / "w2"), str(tmp_path / "o2"), str(state))
    kill_once_written(_resumable_grpo, args, state)
    assert not (tmp_path / "o2" / "config.json").exists()  # stopped after step 2, nothing saved

    resumed = _resumable_grpo(str(tiny_model), str(db), str(tmp_path / "w2"), str(tmp_path / "o2"))
    assert resumed.resumed_from == 2 and resumed.steps == 4
    assert not list((tmp_path / "w1").glob("checkpoint-4"))  # no checkpoint of a finished run
    assert resumed.rollouts == whole.rollouts  # the same episodes, step by step
    assert resumed.losses == pytest.approx(whole.losses, abs=1e-6) and len(whole.losses) == 4
    assert [p["reward"] for p in resumed.validation] == [p["reward"] for p in whole.validation]
    assert resumed.chosen_step == whole.chosen_step
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "o2").state_dict()
    reference = AutoModelForCausalLM.from_pretrained(tmp_path / "o1").state_dict()
    assert all(torch.allclose(saved[k], reference[k], atol=1e-6) for k in reference)
