"""Multi-turn generation for a ``transformers`` causal LM on CPU (or one GPU).

What the :class:`Engine` does that ``model.generate`` does not:

* **KV reuse across turns.** The keys and values of every sequence it generated are kept in a
  :class:`PrefixCache` (memory-bounded, least recently used first out), found again by token
  prefix: when a rollout comes back with the environment's tokens appended, only those and the
  new tokens are forwarded — the history is never prefilled again. The same holds for a chat
  conversation re-sent with one more turn (the LLM Quizzer, the judge).
* **Shared prefixes once.** Rows of one call that share a prompt prefix (system prompt, schema,
  examples) and find nothing cached forward that prefix once; every row then continues from it.
* **Batched sampling with reproducible per-sequence streams.** Temperature / top-k / top-p for
  the whole batch at once, then inverse-CDF sampling with one uniform per row and step drawn up
  front from the row's own ``torch.Generator`` — no Python loop over rows per token, and a row's
  tokens never depend on its batch neighbours (up to float rounding of batched matmuls).
* **Incremental stops, finished rows dropped.** EOS is checked on the whole batch; a row's tail
  is decoded only when its new token could complete a stop string (its text holds the stop's
  last character). A finished row's cache is stored at once; the row leaves the batch when a
  quarter of the batch has finished (dropping rows copies every layer's keys and values, which
  costs more than carrying a few finished rows), so later steps compute mostly running rows.
* **Bounded batches.** A batch holds at most ``batch_tokens`` positions (rows × its longest
  prompt plus the new tokens): its keys, values and attention workspace grow with that product,
  and 128 multi-turn episodes with few-shot prompts of ≈ 2,000 tokens took a 0.5B model's
  evaluation past 23 GB; long histories decode in fewer rows at a time instead.
* **Precision.** The engine computes in the model's own dtype (bfloat16 where the hardware has
  it: :mod:`components.llm.precision`). A float32 trainer policy samples through a bfloat16
  copy of itself (:func:`components.training.grpo.policy_backend`): autocast over float32
  weights measured slower than plain float32 here (the weights are cast again every step).

Layout. Rows of a batch are right-aligned: ``[holes][cached prefix][holes][new tokens]`` — the
2-D attention mask marks holes 0 and positions are the running count of real tokens, so a row's
keys are those it would have alone. Greedy decoding equals ``model.generate``'s except where
the top two logits are within float tolerance (batching changes matmul shapes); the tests report
the agreement rate.

Reproducibility: a seed gives the same samples run to run (a fresh engine, as a new process
has). Within one process, a call that finds its prompts cached computes the same logits in other
matmul shapes; float rounding can then flip a draw where two candidates' cumulative
probabilities meet (rare for a trained model, common for a random one's flat distributions).

The cache is cleared whenever the model's weights change (an optimizer step between GRPO
generation steps), detected from the parameters' version counters.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from components.llm.base import Generation, SamplingParams

__all__ = ["Engine", "PrefixCache", "cut_at_stop"]

#: a prompt prefix shared by several rows of a call is forwarded once when at least this long
MIN_SHARED_PREFIX = 16


class _GrowingLayer(DynamicLayer):
    """A cache layer with preallocated room (doubling): appending a step writes in place instead
    of concatenating the whole history, as ``DynamicLayer`` does."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        super().__init__()
        self.device, self.is_initialized = keys.device, True
        self._k, self._v, self._n = keys, values, keys.shape[-2]
        self._view()

    def _view(self) -> None:
        self.keys, self.values = self._k[..., : self._n, :], self._v[..., : self._n, :]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        need = self._n + key_states.shape[-2]
        if need > self._k.shape[-2]:
            cap = max(need, 2 * self._k.shape[-2], 64)
            shape = (*self._k.shape[:-2], cap, self._k.shape[-1])
            k, v = self._k.new_empty(shape), self._v.new_empty(shape)
            k[..., : self._n, :], v[..., : self._n, :] = self.keys, self.values
            self._k, self._v = k, v
        self._k[..., self._n : need, :], self._v[..., self._n : need, :] = key_states, value_states
        self._n = need
        self._view()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._n

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._k, self._v = self._k[indices], self._v[indices]
        self._view()

    def crop(self, tokens_to_remove: int) -> None:  # pragma: no cover - not used by the engine
        raise NotImplementedError


def _cache(layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    cache = DynamicCache()
    cache.layers = [_GrowingLayer(k, v) for k, v in layers]
    return cache


@dataclass
class _Entry:
    tokens: np.ndarray  # int64, the tokens whose keys/values are stored
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per layer, [heads, len(tokens), head_dim]

    @property
    def nbytes(self) -> int:
        return sum(k.numel() * k.element_size() * 2 for k, _ in self.kv)


class PrefixCache:
    """Keys/values of recent sequences, found again by their longest common token prefix."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next = 0
        self.bytes = 0
        self.hits = self.reused_tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def lookup(self, ids: np.ndarray) -> tuple[int, _Entry | None]:
        """The longest prefix of ``ids`` (at most ``len(ids) - 1``: the last token must be
        forwarded for its logits) that an entry holds, and that entry."""
        best, found, key = 0, None, None
        for k, entry in self._entries.items():
            m = min(len(entry.tokens), len(ids) - 1)
            if m <= best:
                continue
            same = entry.tokens[:m] == ids[:m]
            n = m if same.all() else int(np.argmin(same))
            if n > best:
                best, found, key = n, entry, k
        if key is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            self.reused_tokens += best
        return best, found

    def put(self, tokens: Sequence[int], kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        entry = _Entry(np.asarray(tokens, dtype=np.int64), kv)
        if entry.nbytes > self.budget or not len(entry.tokens):
            return
        for k, old in list(self._entries.items()):  # a sequence that only extends an old one replaces it
            if len(old.tokens) <= len(entry.tokens) and np.array_equal(entry.tokens[: len(old.tokens)], old.tokens):
                self.bytes -= old.nbytes
                del self._entries[k]
        self._entries[self._next] = entry
        self._next += 1
        self.bytes += entry.nbytes
        while self.bytes > self.budget and self._entries:
            _, old = self._entries.popitem(last=False)
            self.bytes -= old.nbytes


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    """Text before the earliest stop string, and that string (None when none occurs)."""
    best: tuple[int, str] | None = None
    for s in stops:
        if not s:
            continue
        pos = text.find(s)
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, s)
    return (text, None) if best is None else (text[: best[0]], best[1])


class _Stops:
    """Which token ids can complete a stop string (their text holds a stop's last character),
    per tokenizer and stop set — computed once per tokenizer by decoding the vocabulary."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._texts: list[str] | None = None
        self._by_stops: dict[tuple[str, ...], torch.Tensor] = {}

    def candidates(self, stops: tuple[str, ...], vocab: int) -> torch.Tensor:
        if stops not in self._by_stops:
            if self._texts is None:
                self._texts = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            last = {s[-1] for s in stops}
            flags = torch.zeros(vocab, dtype=torch.bool)
            for i, text in enumerate(self._texts[:vocab]):
                if any(c in text for c in last):
                    flags[i] = True
            self._by_stops[stops] = flags
        return self._by_stops[stops]


#: per tokenizer (a policy re-wrapped every GRPO step keeps its tokenizer)
_STOPS: weakref.WeakKeyDictionary[Any, _Stops] = weakref.WeakKeyDictionary()


#: top-p is decided among the top this-many tokens when they already hold the top-p mass (an exact
#: shortcut: no full-vocabulary sort per step); otherwise the whole vocabulary is sorted
TOP_P_CANDIDATES = 256


def _sample(logits: torch.Tensor, uniforms: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """One token per row: argmax at temperature 0, else temperature / top-k / top-p and an
    inverse-CDF draw with each row's uniform (over the candidates in descending-score order when
    top-k or top-p truncates, so a row's draw never depends on which path its batch took)."""
    if params.temperature == 0:
        return logits.argmax(dim=-1)
    scores = logits.float() / params.temperature
    vocab = scores.shape[-1]
    k = min(params.top_k, vocab) if params.top_k > 0 else vocab
    if k == vocab and params.top_p >= 1.0:
        cdf = scores.softmax(dim=-1).cumsum(dim=-1)
        target = (uniforms * cdf[:, -1]).unsqueeze(-1)
        return torch.searchsorted(cdf, target).squeeze(-1).clamp(max=vocab - 1)
    vals, idx = torch.topk(scores, min(k, TOP_P_CANDIDATES), dim=-1)  # sorted, descending
    # the share of each candidate in the distribution top-p is taken over (after top-k)
    kept = scores if k == vocab else vals if k <= TOP_P_CANDIDATES else torch.topk(scores, k, dim=-1).values
    norm = torch.logsumexp(kept, dim=-1, keepdim=True)
    probs = (vals - norm).exp()
    if params.top_p < 1.0 and k > TOP_P_CANDIDATES and not bool((probs.sum(-1) > params.top_p).all()):
        vals, idx = torch.sort(scores, descending=True, dim=-1)
        vals, idx = vals[:, :k], idx[:, :k]
        probs = (vals - torch.logsumexp(vals, dim=-1, keepdim=True)).exp()
    if params.top_p < 1.0:
        drop = probs.cumsum(dim=-1) - probs > params.top_p  # keeps at least the top token
        vals = vals.masked_fill(drop, float("-inf"))
    cdf = vals.softmax(dim=-1).cumsum(dim=-1)
    target = (uniforms * cdf[:, -1]).unsqueeze(-1)
    pick = torch.searchsorted(cdf, target).clamp(max=vals.shape[-1] - 1)
    return idx.gather(-1, pick).squeeze(-1)


class Engine:
    """Generation over one loaded model (module docstring). ``cache_bytes`` bounds the prefix
    cache; ``batch_size`` the rows decoded together and ``batch_tokens`` the positions a batch
    holds at its widest (rows × (longest prompt + ``max_new_tokens``)): a batch's keys and values
    and its attention workspace grow with that product, so long multi-turn histories decode in
    fewer rows at a time instead of exhausting memory (one row longer than the bound runs alone)."""

    #: the default ``batch_tokens``: 65,536 positions (Qwen2.5-0.5B in float32 keeps ≈ 24 KB of
    #: keys and values per position: ≈ 1.6 GB for the batch at its widest)
    batch_tokens = 65_536

    #: a finished row stays in the batch (its steps wasted) until this share of the batch has
    #: finished: dropping rows copies every layer's keys/values, which costs more than carrying a
    #: few finished rows for some steps
    compact_share = 0.25

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        eos_ids: set[int],
        *,
        batch_size: int = 128,
        cache_bytes: int = 4 << 30,
        batch_tokens: int | None = None,
    ) -> None:
        self.model, self.tokenizer, self.eos_ids, self.batch_size = model, tokenizer, eos_ids, batch_size
        if batch_tokens is not None:
            self.batch_tokens = batch_tokens
        self.device = next(model.parameters()).device
        self.cache = PrefixCache(cache_bytes)
        self._stops = _STOPS.get(tokenizer) or _STOPS.setdefault(tokenizer, _Stops(tokenizer))
        self._eos = torch.tensor(sorted(eos_ids), dtype=torch.long)
        self._weights = self._weights_version()
        self.forwarded_tokens = 0  # real (non-hole) positions forwarded, all calls together

    def _weights_version(self) -> tuple[int, ...]:
        params = list(self.model.parameters())
        return tuple(p._version for p in (params[0], params[len(params) // 2], params[-1]))

    # -- public ---------------------------------------------------------------------------------
    def generate(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], params: SamplingParams
    ) -> list[Generation]:
        """One completion per prompt (token ids), sampled with that row's seed."""
        version = self._weights_version()
        if version != self._weights:  # the weights moved: every cached key/value is stale
            self.cache.clear()
            self._weights = version
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))  # similar lengths batch together
        out: list[Generation | None] = [None] * len(prompts)
        for rows in self._batches(order, [len(p) for p in prompts], params.max_new_tokens):
            gens = self._batch([list(prompts[i]) for i in rows], [seeds[i] for i in rows], params)
            for i, g in zip(rows, gens, strict=True):
                out[i] = g
        return out  # type: ignore[return-value]

    def _batches(self, order: list[int], lengths: list[int], new_tokens: int) -> list[list[int]]:
        """``order`` (longest prompt first) cut into batches of at most ``batch_size`` rows and
        ``batch_tokens`` positions (rows × (the batch's longest prompt + ``new_tokens``))."""
        batches: list[list[int]] = []
        for i in order:
            rows = batches[-1] if batches else None
            if (
                rows is None
                or len(rows) >= self.batch_size
                or (len(rows) + 1) * (lengths[rows[0]] + new_tokens) > self.batch_tokens
            ):
                batches.append([i])
            else:
                rows.append(i)
        return batches

    # -- one batch ------------------------------------------------------------------------------
    def _share_prefix(self, prompts: list[np.ndarray], cached: list[int]) -> None:
        """Forward the longest prefix shared by the rows that found little in the cache, once."""
        fresh = [p for p, n in zip(prompts, cached, strict=True) if n < MIN_SHARED_PREFIX]
        if len(fresh) < 2:
            return
        m = min(len(p) for p in fresh) - 1
        same = np.all([p[:m] == fresh[0][:m] for p in fresh[1:]], axis=0)
        n = m if same.all() else int(np.argmin(same))
        if n >= MIN_SHARED_PREFIX:
            self._prefill(fresh[0][:n].tolist())

    def _prefill(self, tokens: list[int]) -> None:
        """Forward ``tokens`` alone and store their keys/values."""
        cache = DynamicCache()
        ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
        self.forwarded_tokens += len(tokens)
        self.cache.put(tokens, [(layer.keys[0], layer.values[0]) for layer in cache.layers])

    def _layout(self, prompts: list[list[int]]) -> tuple[DynamicCache | None, torch.Tensor, torch.Tensor, int]:
        """The batch's cache (each row's cached prefix right-aligned), attention mask, and the
        new tokens per row (right-aligned, holes padded); the prefix length per row is reused."""
        arrays = [np.asarray(p, dtype=np.int64) for p in prompts]
        hits = [self.cache.lookup(a) for a in arrays]
        self._share_prefix(arrays, [n for n, _ in hits])
        hits = [
            self.cache.lookup(a) if n < MIN_SHARED_PREFIX else (n, e) for a, (n, e) in zip(arrays, hits, strict=True)
        ]
        width = max(n for n, _ in hits)
        new = [p[n:] for p, (n, _) in zip(prompts, hits, strict=True)]
        k = max(len(t) for t in new)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.tensor([[pad] * (k - len(t)) + t for t in new], dtype=torch.long)
        mask = torch.tensor(
            [
                [0] * (width - n) + [1] * n + [0] * (k - len(t)) + [1] * len(t)
                for (n, _), t in zip(hits, new, strict=True)
            ],
            dtype=torch.long,
        )
        cache = None
        if width:
            layers = []
            for layer in range(len(next(e for _, e in hits if e is not None).kv)):
                ref = next(e for _, e in hits if e is not None).kv[layer][0]
                kk = ref.new_zeros((len(prompts), ref.shape[0], width, ref.shape[-1]))
                vv = torch.zeros_like(kk)
                for r, (n, e) in enumerate(hits):
                    if n:
                        kk[r, :, width - n :], vv[r, :, width - n :] = e.kv[layer][0][:, :n], e.kv[layer][1][:, :n]
                layers.append((kk, vv))
            cache = _cache(layers)
        self.forwarded_tokens += sum(len(t) for t in new)
        return cache, ids, mask, k

    def _batch(self, prompts: list[list[int]], seeds: list[int], params: SamplingParams) -> list[Generation]:
        t0 = time.perf_counter()
        stops = tuple(s for s in params.stop if s)
        cache, ids, mask, _ = self._layout(prompts)
        b = len(prompts)
        gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
        uniforms = torch.stack([torch.rand(params.max_new_tokens, generator=g) for g in gens])
        candidates = self._stops.candidates(stops, self.model.config.vocab_size) if stops else None
        window = max((len(s) for s in stops), default=0) + 8
        generated: list[list[int]] = [[] for _ in range(b)]
        reasons = ["length"] * b
        alive = list(range(b))  # batch position → row
        dead = torch.zeros(b, dtype=torch.bool)  # finished rows still in the batch (dropped lazily)
        with torch.inference_mode():
            if cache is None:
                cache = DynamicCache()
            positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -ids.shape[1] :]
            logits = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions.to(self.device),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            ).logits[:, -1]
            if not isinstance(cache.layers[0], _GrowingLayer):  # the first forward made plain layers
                cache = _cache([(layer.keys, layer.values) for layer in cache.layers])
            for step in range(params.max_new_tokens):
                tokens = _sample(logits, uniforms[alive, step], params).cpu()
                done = torch.isin(tokens, self._eos) & ~dead
                for j, r in enumerate(alive):
                    if dead[j]:
                        continue
                    generated[r].append(int(tokens[j]))
                    if done[j]:
                        reasons[r] = "eos"
                    elif candidates is not None and candidates[tokens[j]]:
                        tail = self.tokenizer.decode(generated[r][-window:], skip_special_tokens=True)
                        if any(s in tail for s in stops):
                            done[j], reasons[r] = True, "stop"
                if step == params.max_new_tokens - 1:
                    done = ~dead
                if done.any():
                    self._store(cache, mask, alive, done, prompts, generated)
                    dead |= done
                    if dead.all():
                        break
                    if int(dead.sum()) >= self.compact_share * len(alive):
                        keep = (~dead).nonzero().flatten()
                        alive = [alive[j] for j in keep.tolist()]
                        cache.batch_select_indices(keep.to(self.device))
                        mask, tokens, dead = mask[keep], tokens[keep], dead[keep]
                mask = torch.cat([mask, torch.ones(len(alive), 1, dtype=torch.long)], dim=1)
                position = (mask.sum(-1, keepdim=True) - 1).to(self.device)
                logits = self.model(
                    input_ids=tokens[:, None].to(self.device),
                    attention_mask=mask.to(self.device),
                    position_ids=position,
                    cache=cache,
                    use_cache=True,
                ).logits[:, -1]
                self.forwarded_tokens += len(alive) - int(dead.sum())
        latency = time.perf_counter() - t0
        return [self._generation(prompts[r], generated[r], reasons[r], stops, latency) for r in range(b)]

    def _store(
        self,
        cache: DynamicCache,
        mask: torch.Tensor,
        alive: list[int],
        done: torch.Tensor,
        prompts: list[list[int]],
        generated: list[list[int]],
    ) -> None:
        """Keep the finished rows' keys/values (their real positions only): the prompt and every
        generated token but the last, which was sampled, not forwarded."""
        for j in done.nonzero().flatten().tolist():
            r = alive[j]
            real = mask[j].bool().nonzero().flatten().to(self.device)
            kv = [(layer.keys[j][:, real].clone(), layer.values[j][:, real].clone()) for layer in cache.layers]
            tokens = prompts[r] + generated[r][:-1]
            if len(tokens) == len(real):
                self.cache.put(tokens, kv)

    def _generation(
        self, prompt: list[int], tokens: list[int], reason: str, stops: tuple[str, ...], latency: float
    ) -> Generation:
        text, hit = cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), stops)
        stop_reason = hit if hit is not None else ("eos" if reason == "eos" else "length")
        return Generation(
            text=text,
            prompt_tokens=len(prompt),
            completion_tokens=len(tokens),
            stop_reason=stop_reason,
            latency_s=latency,
            token_ids=tuple(tokens),
        )
