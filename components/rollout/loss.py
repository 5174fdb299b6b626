"""The masked sequence loss every trainer uses on rollouts: environment tokens never count.

:func:`completion_logprobs` runs the model once over ``prompt_ids + completion_ids`` and returns
the log-probability of each completion token given everything before it; :func:`masked_nll`
averages ``−log p`` over the tokens whose ``loss_mask`` is 1. Masked tokens still condition
the later model tokens (they are real context); they are only never *targets*.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["completion_logprobs", "masked_nll"]


def completion_logprobs(model: Any, prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> torch.Tensor:
    """``log p(completion[i] | prompt, completion[:i])`` for every completion token (1-D)."""
    if not completion_ids:
        return torch.zeros(0)
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)], dtype=torch.long)
    logits = model(input_ids=ids).logits[0, :-1].float()
    targets = ids[0, 1:]
    logp = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]
    return logp[len(prompt_ids) - 1 :]


def masked_nll(
    model: Any, prompt_ids: Sequence[int], completion_ids: Sequence[int], loss_mask: Sequence[int]
) -> torch.Tensor:
    """Mean negative log-likelihood over the model's own tokens (``loss_mask == 1``)."""
    if len(completion_ids) != len(loss_mask):
        raise ValueError("loss_mask must have one entry per completion token")
    mask = torch.tensor(list(loss_mask), dtype=torch.float32)
    if mask.sum() == 0:
        raise ValueError("no model token to score: the loss mask is all zeros")
    logp = completion_logprobs(model, prompt_ids, completion_ids)
    return -(logp * mask).sum() / mask.sum()
