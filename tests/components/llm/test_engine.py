"""The multi-turn engine on real models: greedy output equals ``model.generate`` (up to ties within
float tolerance, agreement rate reported), sampling is reproducible per sequence, the history is
never forwarded again after an environment insertion (the model's own call log), shared prefixes
are forwarded once, finished rows leave the batch, and the prefix cache stays within its budget
and forgets when the weights change."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from components.llm import SamplingParams, tiny_random_model
from components.llm.engine import Engine
from components.llm.transformers_backend import TransformersBackend, sequence_seed

GREEDY = SamplingParams(max_new_tokens=24, temperature=0)
QUESTIONS = [
    "What is the capital of France?",
    "Name three prime numbers.",
    "Write one sentence about graphs.",
    "Which planet is the largest?",
    "Translate 'cat' into German.",
    "What does a database index do?",
    "Count from one to five.",
    "Who wrote Hamlet?",
]


@pytest.fixture()
def tiny(one_thread: None, tmp_path: Path) -> Iterator[TransformersBackend]:
    backend = TransformersBackend(tiny_random_model(tmp_path / "m", seed=5), batch_size=4, threads=1, dtype="float32")
    yield backend
    backend.close()


def _prompt(backend: TransformersBackend, question: str, system: str | None = None) -> list[int]:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": question}]
    text = backend.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return backend.tokenizer(text, add_special_tokens=False)["input_ids"]


class CallLog:
    """The shapes of every ``input_ids`` the model is called with."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.shapes: list[tuple[int, int]] = []
        self._hook = model.register_forward_pre_hook(self._record, with_kwargs=True)

    def _record(self, module: object, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.shapes.append(tuple(ids.shape))

    def close(self) -> None:
        self._hook.remove()


def _reference_greedy(backend: TransformersBackend, prompt: list[int], n: int) -> tuple[list[int], torch.Tensor]:
    """``model.generate`` alone on one prompt (no padding), with its per-step scores."""
    with torch.inference_mode():
        out = backend.model.generate(
            input_ids=torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=n,
            do_sample=False,
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=backend.tokenizer.pad_token_id,
            eos_token_id=sorted(backend.eos_ids),
        )
    return out.sequences[0, len(prompt) :].tolist(), torch.stack(out.scores)[:, 0]


def _greedy_agreement(backend: TransformersBackend, tie: Callable[[torch.Tensor], float]) -> int:
    """How many of the questions' greedy outputs equal ``model.generate``'s; where one differs,
    the top two logits at the first difference must be within ``tie(top_two)`` of each other."""
    prompts = [_prompt(backend, q, "You are a helpful assistant.") for q in QUESTIONS]
    engine = Engine(backend.model, backend.tokenizer, backend.eos_ids, batch_size=8)
    agree = 0
    for prompt, gen in zip(prompts, engine.generate(prompts, [0] * len(prompts), GREEDY), strict=True):
        ref, scores = _reference_greedy(backend, prompt, GREEDY.max_new_tokens)
        mine = list(gen.token_ids)
        if mine == ref[: len(mine)] and (len(mine) == len(ref) or gen.stop_reason == "eos"):
            agree += 1
            continue
        step = next(i for i, (a, b) in enumerate(zip(mine, ref, strict=False)) if a != b)
        top2 = torch.topk(scores[step].float(), 2).values
        assert float(top2[0] - top2[1]) <= tie(top2), f"diverged at step {step} without a tie: {top2.tolist()}"
    return agree


def test_greedy_equals_model_generate_up_to_float_ties(smol: TransformersBackend) -> None:
    agree = _greedy_agreement(smol, lambda top2: 1e-3)
    print(f"greedy agreement with model.generate: {agree}/{len(QUESTIONS)}")
    assert agree >= len(QUESTIONS) - 1


def test_sampling_is_reproducible_per_sequence_whatever_the_batch(smol: TransformersBackend) -> None:
    prompts = [_prompt(smol, q) for q in QUESTIONS[:5]]
    params = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95)
    seeds = [sequence_seed(11 + i, 0) for i in range(len(prompts))]
    batched = Engine(smol.model, smol.tokenizer, smol.eos_ids, batch_size=8).generate(prompts, seeds, params)
    again = Engine(smol.model, smol.tokenizer, smol.eos_ids, batch_size=8).generate(prompts, seeds, params)
    alone = [
        Engine(smol.model, smol.tokenizer, smol.eos_ids).generate([p], [s], params)[0]
        for p, s in zip(prompts, seeds, strict=True)
    ]
    assert [g.token_ids for g in batched] == [g.token_ids for g in again] == [g.token_ids for g in alone]
    other = Engine(smol.model, smol.tokenizer, smol.eos_ids).generate(prompts, [s + 1 for s in seeds], params)
    assert [g.token_ids for g in other] != [g.token_ids for g in batched]  # another seed, other samples


def test_after_an_environment_insertion_only_the_new_positions_are_forwarded(tiny: TransformersBackend) -> None:
    engine, tok = tiny.engine, tiny.tokenizer
    prompt = _prompt(tiny, "Find the author of paper 3.")
    first = engine.generate([prompt], [1], SamplingParams(max_new_tokens=12, temperature=0))[0]
    env = tok("\n\n<information>author_7 wrote it</information>\n\n", add_special_tokens=False)["input_ids"]
    turn2 = prompt + list(first.token_ids) + env
    log = CallLog(tiny.model)
    try:
        second = engine.generate([turn2], [1], SamplingParams(max_new_tokens=6, temperature=0))[0]
    finally:
        log.close()
    # the history (prompt + first turn but its last, never-forwarded token) comes from the cache:
    # the first call of the turn forwards that last token and the environment's tokens, then one per step
    assert log.shapes[0] == (1, 1 + len(env))
    assert log.shapes[1:] == [(1, 1)] * (len(second.token_ids) - 1)
    fresh = Engine(tiny.model, tok, tiny.eos_ids).generate(
        [turn2], [1], SamplingParams(max_new_tokens=6, temperature=0)
    )
    assert fresh[0].token_ids == second.token_ids  # the same continuation as a full prefill


def test_a_shared_prompt_prefix_is_forwarded_once(tiny: TransformersBackend) -> None:
    system = "You answer questions about a property graph. " * 6
    prompts = [_prompt(tiny, q, system) for q in QUESTIONS[:4]]
    log = CallLog(tiny.model)
    try:
        tiny.engine.generate(prompts, [0, 1, 2, 3], SamplingParams(max_new_tokens=3, temperature=0))
    finally:
        log.close()
    shared, batch = log.shapes[0], log.shapes[1]
    assert shared[0] == 1 and shared[1] > 40  # the common prefix, alone
    assert batch[0] == 4 and batch[1] < len(prompts[0]) - 40  # then each row's own suffix only


def test_finished_rows_leave_the_batch(tiny: TransformersBackend) -> None:
    prompts = [_prompt(tiny, q) for q in QUESTIONS[:4]]
    sampled = SamplingParams(max_new_tokens=10, temperature=1.0)  # a random tiny model's greedy text is "\n" * n
    free = tiny.engine.generate(prompts, [0, 1, 2, 3], sampled)
    # a stop string made of the text one row generates early ends that row only
    stop = tiny.tokenizer.decode(free[2].token_ids[:3], skip_special_tokens=True)
    assert not any(stop in g.text for i, g in enumerate(free) if i != 2)
    params = SamplingParams(max_new_tokens=10, temperature=1.0, stop=(stop,))
    log = CallLog(tiny.model)
    try:
        stopped = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids).generate(prompts, [0, 1, 2, 3], params)
    finally:
        log.close()
    assert stopped[2].stop_reason == stop and stopped[2].completion_tokens <= 3
    batches = [s[0] for s in log.shapes[1:]]
    assert batches == sorted(batches, reverse=True) and batches[-1] < 4  # rows left as they finished
    for seed, (prompt, gen) in enumerate(zip(prompts, stopped, strict=True)):  # each row as if it had run alone
        alone = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids).generate([prompt], [seed], params)[0]
        assert alone.token_ids == gen.token_ids


def test_a_batch_holds_at_most_batch_tokens_positions(tiny: TransformersBackend) -> None:
    """Long histories decode in fewer rows at a time: with room for two rows of the longest
    prompt, six prompts run as three batches of ≤ 2 rows (a prompt longer than the bound runs
    alone), sampling the same tokens as one unbounded batch."""
    prompts = [_prompt(tiny, q * (1 + i % 3)) for i, q in enumerate(QUESTIONS[:6])]
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    widest = max(len(p) for p in prompts) + params.max_new_tokens
    free = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids).generate(prompts, list(range(6)), params)
    log = CallLog(tiny.model)
    try:
        bounded = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids, batch_tokens=2 * widest).generate(
            prompts, list(range(6)), params
        )
    finally:
        log.close()
    assert max(shape[0] for shape in log.shapes) <= 2 and len([s for s in log.shapes if s[1] > 1]) >= 3
    assert [g.token_ids for g in bounded] == [g.token_ids for g in free]
    engine = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids, batch_tokens=10)
    assert engine._batches([0, 1], [50, 40], 6) == [[0], [1]]  # each alone when one exceeds the bound


def test_the_cache_keeps_to_its_budget_and_forgets_changed_weights(tiny: TransformersBackend) -> None:
    prompts = [_prompt(tiny, q) for q in QUESTIONS]
    engine = Engine(tiny.model, tiny.tokenizer, tiny.eos_ids, cache_bytes=300_000)
    engine.generate(prompts, list(range(len(prompts))), SamplingParams(max_new_tokens=8, temperature=0))
    assert 0 < engine.cache.bytes <= 300_000 and 0 < len(engine.cache) < len(prompts)
    with torch.no_grad():  # an optimizer step: the cached keys/values no longer hold
        for p in tiny.model.parameters():
            p.mul_(1.0)
    before = engine.forwarded_tokens
    engine.generate(prompts[:1], [0], SamplingParams(max_new_tokens=1, temperature=0))
    assert engine.forwarded_tokens - before == len(prompts[0])  # nothing reused


def _reference_sample(logits: torch.Tensor, u: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Temperature, top-k, top-p over the fully sorted vocabulary, then the inverse-CDF draw in
    that order — the definition the engine's top-p shortcut must equal."""
    vals, idx = torch.sort(logits.float() / params.temperature, descending=True, dim=-1)
    if params.top_k > 0:
        vals, idx = vals[:, : params.top_k], idx[:, : params.top_k]
    probs = vals.softmax(dim=-1)
    vals = vals.masked_fill(probs.cumsum(-1) - probs > params.top_p, float("-inf"))
    cdf = vals.softmax(dim=-1).cumsum(-1)
    pick = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1)).clamp(max=vals.shape[-1] - 1)
    return idx.gather(-1, pick).squeeze(-1)


@pytest.mark.parametrize("top_k", [0, 40, 1000])
def test_the_top_p_shortcut_draws_what_a_full_sort_draws(top_k: int) -> None:
    from components.llm.engine import _sample

    gen = torch.Generator().manual_seed(0)
    vocab = 5000
    # peaked rows (the shortcut's case), flat rows (the full sort's), and both in one batch
    peaked = torch.randn(6, vocab, generator=gen) * 8
    flat = torch.randn(6, vocab, generator=gen) * 0.1
    for logits in (peaked, flat, torch.cat([peaked[:3], flat[:3]])):
        u = torch.rand(logits.shape[0], generator=gen)
        for p in (0.5, 0.9, 0.99):
            params = SamplingParams(temperature=0.8, top_p=p, top_k=top_k, max_new_tokens=1)
            assert torch.equal(_sample(logits, u, params), _reference_sample(logits, u, params))


@pytest.fixture(scope="module")
def smol_bf16(one_thread: None) -> Iterator[TransformersBackend]:
    backend = TransformersBackend(threads=1, dtype="bfloat16")
    yield backend
    backend.close()


def test_bfloat16_greedy_agrees_with_model_generate_up_to_bfloat16_ties(smol_bf16: TransformersBackend) -> None:
    """In bfloat16 (what ``auto`` picks on hardware with native bf16) batching changes rounding
    more than in float32: the engine's greedy output may leave ``model.generate``'s only where
    the top two logits are within a few bfloat16 steps at their magnitude (8 bits of mantissa)."""
    agree = _greedy_agreement(smol_bf16, lambda top2: 4 * float(2 ** (torch.floor(torch.log2(top2[0].abs())) - 7)))
    print(f"bfloat16 greedy agreement with model.generate: {agree}/{len(QUESTIONS)}")
    assert agree >= len(QUESTIONS) // 2


def test_bfloat16_sampling_is_reproducible_for_a_seed(smol_bf16: TransformersBackend) -> None:
    prompts = [_prompt(smol_bf16, q) for q in QUESTIONS[:5]]
    params = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.95)
    seeds = [sequence_seed(11 + i, 0) for i in range(len(prompts))]
    runs = [
        Engine(smol_bf16.model, smol_bf16.tokenizer, smol_bf16.eos_ids).generate(prompts, seeds, params)
        for _ in range(2)
    ]
    assert [g.token_ids for g in runs[0]] == [g.token_ids for g in runs[1]]


def test_a_float32_policy_samples_through_a_synced_bfloat16_copy(one_thread: None, tmp_path: Path) -> None:
    """A bf16 mixed-precision trainer's float32 policy samples through a bfloat16 copy of itself:
    the copy's weights are the policy's (rounded), a seed gives the same samples, and after an
    optimizer step the next call copies the new weights in (and forgets the cached keys/values)."""
    from types import SimpleNamespace

    from components.training.grpo import policy_backend

    fp32 = TransformersBackend(tiny_random_model(tmp_path / "m", seed=5), threads=1, dtype="float32")
    policy = fp32.model
    trainer = SimpleNamespace(
        model=policy,
        processing_class=fp32.tokenizer,
        args=SimpleNamespace(bf16=True),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
    )
    backend = policy_backend(trainer)
    assert backend.dtype == "bfloat16" and next(policy.parameters()).dtype == torch.float32
    copy = backend.model
    assert copy is not policy
    for mine, theirs in zip(copy.parameters(), policy.parameters(), strict=True):
        assert torch.equal(mine, theirs.to(torch.bfloat16))
    prompts = [_prompt(backend, q) for q in QUESTIONS[:3]]
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    first = [g.token_ids for g in backend.engine.generate(prompts, [1, 2, 3], params)]
    assert policy_backend(trainer) is backend  # unchanged weights: the same copy, the same cache
    assert len(backend.engine.cache) > 0
    with torch.no_grad():  # an optimizer step on the policy
        for p in policy.parameters():
            p.add_(0.01)
    again = policy_backend(trainer)
    assert again is backend
    for mine, theirs in zip(copy.parameters(), policy.parameters(), strict=True):
        assert torch.equal(mine, theirs.to(torch.bfloat16))
    before = again.engine.forwarded_tokens
    again.engine.generate(prompts[:1], [1], SamplingParams(max_new_tokens=1, temperature=0))
    assert again.engine.forwarded_tokens - before == len(prompts[0])  # stale keys/values not reused
    repeat = [g.token_ids for g in policy_backend(trainer).engine.generate(prompts, [1, 2, 3], params)]
    fresh = TransformersBackend.wrap(copy, fp32.tokenizer)  # the same weights, a new engine
    assert repeat == [g.token_ids for g in fresh.engine.generate(prompts, [1, 2, 3], params)]
    assert len(first) == 3
    trainer.args.bf16 = False
    assert policy_backend(trainer).model is policy  # float32 runs sample from the policy itself
