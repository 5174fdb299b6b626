"""Which process of a multi-process launch writes what a run leaves behind.

``accelerate launch`` and ``torchrun`` start one process per device with ``WORLD_SIZE`` and
``RANK`` set; every process runs the same asset (the trainers need all of them), but only the
main one (rank 0) lands artifacts and records catalog rows (:func:`components.store.artifact.
materialize`); the others build into staging folders of their own, discard them, wait for the
main process and take its catalog row. A process launched alone is the main one and none of this
costs anything (no process group is created). docs/scale.md has the commands.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["from_main", "is_main_process", "wait_for_main", "world_size"]


def world_size() -> int:
    """How many processes run together (1 unless launched by ``accelerate launch`` / ``torchrun``)."""
    return max(1, int(os.environ.get("WORLD_SIZE", "1") or 1))


def is_main_process() -> bool:
    """Whether this process writes (rank 0 of a multi-process launch, or the only process)."""
    return int(os.environ.get("RANK", "0") or 0) == 0


def _group() -> Any:
    """``torch.distributed``, its default process group initialised (through ``accelerate``,
    which picks the backend: gloo on CPUs, NCCL on GPUs) if the trainers have not yet done so."""
    import torch.distributed as dist

    if not dist.is_initialized():
        from accelerate import PartialState

        PartialState()
    return dist


def from_main(value: Any) -> Any:
    """The main process's ``value`` (picklable), in every process: one decision for all of them
    (e.g. "this artifact is already built"), never each process's own view of a shared folder."""
    if world_size() == 1:
        return value
    box = [value]
    _group().broadcast_object_list(box, src=0)
    return box[0]


def wait_for_main() -> None:
    """Block until every process gets here (after the main process has written)."""
    if world_size() > 1:
        _group().barrier()
