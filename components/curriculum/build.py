"""The curriculum table of a certified dataset: a level and a split per admitted item.

Per admitted row: ``level`` (:func:`~components.curriculum.levels.estimate_level`), the round
estimates, ``ood`` (certified items are graph-grounded by construction, so ``False`` unless the
row says otherwise) and ``split`` (:func:`~components.curriculum.splits.entity_grouped_splits`)
over the item's **grounded entities**: its start node, the string parameters of its evidence
queries and, for entity / set answers, the answer values — so no node a question is about, or
answers with, appears on both sides of a split.

:data:`CURRICULUM_SPLITS` is the ``curriculum_splits`` layer (:func:`build_curriculum_splits`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from components.curriculum.levels import estimate_rounds
from components.curriculum.sampler import LEVELS, level_of, level_probabilities
from components.curriculum.splits import SPLITS, entity_grouped_splits
from components.graph.schema import GraphSchema
from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet, write_parquet

__all__ = [
    "CURRICULUM_SPLITS",
    "SplitConfig",
    "build_curriculum",
    "build_curriculum_splits",
    "curriculum_summary",
    "grounded_entities",
    "training_items",
]


def _json(value: Any, default: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return default
    return default if value is None else value


def grounded_entities(row: Mapping[str, Any]) -> list[str]:
    start = _json(row.get("start_node_json"), {}) or {}
    out = [f"node:{start['id']}"] if start.get("id") is not None else []
    for ev in _json(row.get("evidence_json"), []) or []:
        for v in (ev.get("params") or {}).values():
            if isinstance(v, str):
                out.append(f"node:{v}")
    if row.get("answer_type") in ("entity", "set"):
        value = _json(row.get("answer_value_json"), None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                out.append(f"name:{v.casefold()}")
    return out


def build_curriculum(
    rows: Sequence[Mapping[str, Any]],
    schema: GraphSchema,
    *,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> list[dict[str, Any]]:
    admitted = [r for r in rows if r.get("admitted")]
    splits = entity_grouped_splits(
        [(r["id"], grounded_entities(r)) for r in admitted],
        fractions=fractions,
        seed=seed,
        ood=[r["id"] for r in admitted if r.get("ood")],
    )
    out = []
    for r in admitted:
        start = _json(r.get("start_node_json"), {}) or {}
        rounds = estimate_rounds(_json(r.get("evidence_features_json"), []), schema, start.get("label"))
        out.append(
            {
                "id": r["id"],
                "question": r["question"],
                "answer": r["answer"],
                "answer_type": r["answer_type"],
                "level": level_of(rounds),
                "rounds": len(rounds),
                "e_rounds": sum(u > 1 for u in rounds),
                "ood": bool(r.get("ood", False)),
                "split": splits[r["id"]],
                "entities": grounded_entities(r),
            }
        )
    return out


def curriculum_summary(items: Sequence[Mapping[str, Any]], total_steps: int = 100) -> dict[str, Any]:
    """Counts by level × split, entities crossing splits (must be 0) and the sampler's level
    probabilities at the start, middle and end of a stage with the train levels present."""
    counts = Counter((i["level"], i["split"]) for i in items)
    where: dict[str, set[str]] = {}
    for i in items:
        for e in i["entities"]:
            where.setdefault(e, set()).add(i["split"])
    train = {lv for lv in LEVELS if counts[(lv, "train")]}
    available = [lv in train for lv in LEVELS]
    schedule = {}
    if any(available):
        for name, t in (("start", 0), ("middle", (total_steps - 1) // 2), ("end", total_steps - 1)):
            schedule[name] = dict(zip(LEVELS, level_probabilities(t, total_steps, available=available), strict=True))
    return {
        "items": len(items),
        "by_level_split": {f"{lv}/{sp}": counts[(lv, sp)] for lv in LEVELS for sp in SPLITS},
        "crossing_entities": sorted(e for e, s in where.items() if len(s) > 1),
        "sampler": schedule,
    }


def split_items(items: Sequence[Mapping[str, Any]], split: str) -> list[Mapping[str, Any]]:
    """The items of ``split``, OOD items excluded."""
    return [i for i in items if i["split"] == split and not i["ood"]]


def training_items(items: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The items a trainer may use: the train split, OOD items never."""
    return split_items(items, "train")


DEFAULT_FRACTIONS: Final = (0.8, 0.1, 0.1)


@dataclass(frozen=True)
class SplitConfig:
    """A domain YAML's ``curriculum:`` section: the split seed and the train / validation / test
    shares the entity-grouped split aims at (a larger test share when grouping leaves too few
    test questions)."""

    seed: int = 0
    fractions: tuple[float, float, float] = DEFAULT_FRACTIONS
    #: translate admitted items into executed Graph-CoT teacher trajectories
    #: (:mod:`components.curriculum.trajectories`) and use their measured level where one exists
    trajectories: bool = False

    def __post_init__(self) -> None:
        fractions = tuple(float(f) for f in self.fractions)
        if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-9:
            raise ValueError(f"fractions must be three non-negative shares summing to 1, got {list(self.fractions)}")
        object.__setattr__(self, "fractions", fractions)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> SplitConfig:
        return cls(**checked_options(cls, raw, "curriculum"))

    def params(self) -> dict[str, Any]:
        """The fingerprint's parameters (the default shares leave earlier fingerprints as they were)."""
        return {
            "seed": self.seed,
            **({} if self.fractions == DEFAULT_FRACTIONS else {"fractions": list(self.fractions)}),
            **({"trajectories": True} if self.trajectories else {}),
        }


def build_curriculum_splits(
    inputs: Mapping[str, Artifact], config: SplitConfig | int, out_dir: Path, ctx: BuildContext
) -> Artifact:
    """The ``curriculum_splits`` layer: :func:`build_curriculum` of the ``certified`` input's
    rows with the ``snapshot`` input's schema, as ``curriculum.parquet``; the summary is
    :func:`curriculum_summary`. ``config`` may be a bare seed."""
    config = _curriculum_config(config)
    schema = GraphSchema.from_json(inputs["snapshot"].summary["schema"])
    rows = read_parquet(str(inputs["certified"].path))
    items = build_curriculum(rows, schema, fractions=config.fractions, seed=config.seed)
    summary = curriculum_summary(items)
    counts = {"items": len(items)}
    if config.trajectories:
        summary["trajectories"] = measure_levels(items, rows, str(inputs["snapshot"].path), ctx)
        counts["trajectories"] = summary["trajectories"]["trajectories"]
        summary["by_level_split"] = curriculum_summary(items)["by_level_split"]
    path = write_parquet(items, out_dir / "curriculum.parquet")
    return CURRICULUM_SPLITS.artifact(inputs, config, ctx, path=path, counts=counts, summary=summary)


def measure_levels(
    items: list[dict[str, Any]], rows: Sequence[Mapping[str, Any]], db_location: str, ctx: BuildContext | None = None
) -> dict[str, Any]:
    """Build every admitted item's Graph-CoT teacher trajectory on the snapshot; where one exists,
    its measured level replaces the estimate (``level_source`` ``"measured"``, the estimate kept
    as ``estimated_level``, the trajectory as ``trajectory_json``). Returns coverage per family,
    exclusions by reason and the estimated × measured confusion matrix."""
    from components.curriculum.trajectories import coverage, level_confusion, teacher_trajectories
    from components.graph import open_backend
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    by_id = {r["id"]: r for r in rows}
    backend = open_backend(db_location)
    try:
        index = NodeIndex.open(backend, shared_embedder(), progress=False)
        trajectories, excluded = teacher_trajectories([by_id[i["id"]] for i in items], GraphCoT(backend, index=index))
    finally:
        backend.close()
    measured = {t.item_id: t for t in trajectories}
    estimated = {i["id"]: i["level"] for i in items}
    for item in items:
        item["estimated_level"] = item["level"]
        traj = measured.get(item["id"])
        item["level_source"] = "measured" if traj else "estimated"
        record = traj.to_dict() if traj else None
        item["trajectory_json"] = json.dumps(record, ensure_ascii=False)
        if record:
            item["level"] = record["level"]
            item["rounds"] = len(record["rounds"])
            item["e_rounds"] = record["round_kinds"].count("E")
    if ctx is not None:
        ctx.log(f"teacher trajectories: {len(trajectories)} of {len(items)} items ({len(excluded)} excluded)")
    return {
        "trajectories": len(trajectories),
        "coverage": coverage(trajectories, excluded),
        "excluded": dict(Counter(e.reason for e in excluded)),
        "confusion": level_confusion(estimated, trajectories),
    }


def _curriculum_config(config: SplitConfig | int) -> SplitConfig:
    return config if isinstance(config, SplitConfig) else SplitConfig(seed=int(config))


CURRICULUM_SPLITS = Layer(
    "curriculum_splits", build_curriculum_splits, lambda config: _curriculum_config(config).params()
)
