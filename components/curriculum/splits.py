"""Train / validation / test splits grouped so that no entity crosses splits.

Items that share an entity (directly, or through a chain of items) form one group
(union-find); whole groups go to splits. Groups are shuffled with the seed, then ordered largest
first (the shuffle breaks ties), and each is given to the split furthest below its target share
(ties: train, then validation, then test), so the realised fractions track the targets as
closely as the group sizes allow: a large group is placed while every split still has room —
in practice in train — and the many small groups that follow fill every split up to its share
(placed in shuffled order instead, a large group arriving late overfills train and starves
test). Items marked OOD are kept out of train (they go to test; their groups follow them, since
an entity may not cross). Items marked ``train_only`` (a noisy pool's injected faults, whose gold
answers are wrong on purpose) are kept out of validation and test the same way: their groups go
to train.

Items marked ``held_out`` (a domain's clean evaluation questions, ``quiz.held_out_n``) are the
only validation and test items when any is given: a group holding one goes to validation or
test (by the same deficit rule over those two shares), its other items — pool items that share
a node with a held-out question — are left out of every split (absent from the result), and
every other group trains (but one with an OOD item, which is left out too).

>>> items = [("q1", ["a"]), ("q2", ["a", "b"]), ("q3", ["c"]), ("q4", ["d"])]
>>> s = entity_grouped_splits(items, fractions=(0.5, 0.25, 0.25), seed=0)
>>> s["q1"] == s["q2"]
True
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Final

__all__ = ["SPLITS", "entity_grouped_splits"]

SPLITS: Final = ("train", "validation", "test")


def entity_grouped_splits(
    items: Iterable[tuple[str, Iterable[Any]]],
    *,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    ood: Collection[str] = (),
    train_only: Collection[str] = (),
    held_out: Collection[str] = (),
) -> dict[str, str]:
    """``{item id: split}`` (see the module docstring); with ``held_out``, the items left out
    are absent."""
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError("fractions must be three non-negative shares summing to 1")
    items = [(str(i), [str(e) for e in ents]) for i, ents in items]
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for item_id, ents in items:
        node = f"item:{item_id}"
        find(node)
        for e in ents:
            union(node, f"entity:{e}")
    groups: dict[str, list[str]] = {}
    for item_id, _ in items:
        groups.setdefault(find(f"item:{item_id}"), []).append(item_id)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -len(groups[g]))  # stable: the shuffle orders groups of one size
    total = len(items)
    counts = dict.fromkeys(SPLITS, 0)
    out: dict[str, str] = {}
    ood, train_only = set(map(str, ood)), set(map(str, train_only))
    held = set(map(str, held_out))
    if held:
        return _held_out_splits(groups, order, held, ood, fractions)
    to_train = [g for g in order if any(i in train_only for i in groups[g])]
    forced = [g for g in order if g not in set(to_train) and any(i in ood for i in groups[g])]
    free = [g for g in order if g not in set(forced) | set(to_train)]
    for split, placed in (("train", to_train), ("test", forced)):
        for g in placed:
            for i in groups[g]:
                out[i] = split
            counts[split] += len(groups[g])
    for g in free:
        deficit = {s: fractions[k] * total - counts[s] for k, s in enumerate(SPLITS)}
        split = max(SPLITS, key=lambda s: (deficit[s], -SPLITS.index(s)))
        for i in groups[g]:
            out[i] = split
        counts[split] += len(groups[g])
    return out


def _held_out_splits(
    groups: dict[str, list[str]], order: Sequence[str], held: set[str], ood: set[str], fractions: Sequence[float]
) -> dict[str, str]:
    """The held-out mode of :func:`entity_grouped_splits` (module docstring); a group with an OOD
    item and no held-out one is left out too (OOD items never train)."""
    out: dict[str, str] = {}
    evaluation = ("validation", "test")
    counts = dict.fromkeys(evaluation, 0)
    total = len(held)
    shares = fractions[1] + fractions[2]
    target = {s: (fractions[1 + k] / shares if shares else 0.5) * total for k, s in enumerate(evaluation)}
    for g in order:
        mine = [i for i in groups[g] if i in held]
        if not mine:
            for i in groups[g] if not ood.intersection(groups[g]) else ():
                out[i] = "train"
            continue
        split = max(evaluation, key=lambda s: (target[s] - counts[s], -evaluation.index(s)))
        for i in mine:
            out[i] = split
        counts[split] += len(mine)
    return out
