"""The asset graph is reviewable: a change to keys, checks, jobs or sensors shows in this diff."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from orchestration.definitions import build_definitions, defs
from orchestration.domains import DomainConfigError, default_domain, load_domains


def test_asset_graph_snapshot() -> None:
    graph = defs.resolve_asset_graph()
    domains = ("academic", "biomedical", "ecommerce")
    assert sorted(k.to_user_string() for k in graph.get_all_asset_keys()) == sorted(
        [
            f"{d}/{a}"
            for d in domains
            for a in (
                "ablations",
                "certified_dataset",
                "checkpoints",
                "curriculum_splits",
                "dancer_ablations",
                "eval_reports",
                "graph_snapshot",
                "graphcert_grpo",
                "graphcert_rft",
                "graphdancer_dpo",
                "graphdancer_rl",
                "preference_pairs",
                "qa_candidates",
            )
        ]
        + ["grit/eval_report", "grit/grain_checkpoint", "grit/tasks", "transfer/matrix"]
    )  # ablations, dancer_ablations: empty unless configured
    certified_checks = [
        "admitted_nonzero",
        "admitted_rate_bounds_check",
        "admitted_reverified",
        "certifier_accuracy",
        "expectations",
        "hard_failure_rate_bounds_check",
        "leakage_rate_bounds_check",
        "no_leakage",
    ]
    assert sorted(f"{c.asset_key.to_user_string()}:{c.name}" for c in graph.asset_check_keys) == sorted(
        [f"{d}/graph_snapshot:graph_non_empty" for d in domains]
        + [f"{d}/certified_dataset:{c}" for d in domains for c in certified_checks]
        + [f"{d}/curriculum_splits:no_entity_crosses_splits" for d in domains]
    )
    blocking = {
        f"{c.asset_key.to_user_string()}:{c.name}" for c in graph.asset_check_keys if graph.get_check_spec(c).blocking
    }
    assert blocking == {f"{d}/graph_snapshot:graph_non_empty" for d in domains} | {
        f"{d}/curriculum_splits:no_entity_crosses_splits" for d in domains
    } | {
        f"{d}/certified_dataset:{c}"
        for d in domains
        for c in ("admitted_nonzero", "admitted_reverified", "certifier_accuracy", "expectations", "no_leakage")
    }
    assert sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__")) == [
        "academic_pipeline",
        "biomedical_pipeline",
        "ecommerce_pipeline",
        "grit_pipeline",
        "nightly_refresh",
        "transfer_pipeline",
    ]
    assert [s.name for s in defs.sensors] == ["graph_source_sensor"]
    assert [s.name for s in defs.schedules] == ["nightly_source_check"]
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert set(groups.values()) == {"graph", "generation", "certification", "training", "evaluation"}
    assert groups["academic/qa_candidates"] == "generation"
    assert groups["academic/certified_dataset"] == "certification"
    # every asset declares everything it reads as an input (its parents are exactly those)
    key = lambda a: dg.AssetKey(["academic", a])  # noqa: E731
    reads = {
        "qa_candidates": {"graph_snapshot"},
        "certified_dataset": {"qa_candidates", "graph_snapshot"},
        "curriculum_splits": {"certified_dataset", "graph_snapshot"},
        "checkpoints": {"curriculum_splits", "certified_dataset", "graph_snapshot"},
        # the RL stages continue the warm start; pairs come from GraphDancer's stage 1, DPO from the pairs
        "graphcert_grpo": {"checkpoints", "graphcert_rft", "curriculum_splits", "certified_dataset", "graph_snapshot"},
        "graphcert_rft": {"checkpoints", "curriculum_splits", "certified_dataset", "graph_snapshot"},
        "graphdancer_rl": {"checkpoints", "curriculum_splits", "graph_snapshot"},
        "preference_pairs": {"graphdancer_rl", "curriculum_splits", "graph_snapshot"},
        "graphdancer_dpo": {"graphdancer_rl", "preference_pairs", "curriculum_splits"},
        "ablations": {"checkpoints", "curriculum_splits", "certified_dataset", "graph_snapshot"},
        "dancer_ablations": {"graphdancer_rl", "checkpoints", "curriculum_splits", "graph_snapshot"},
        "eval_reports": {
            "graph_snapshot",
            "curriculum_splits",
            "certified_dataset",
            "checkpoints",
            "graphcert_rft",
            "graphcert_grpo",
            "graphdancer_rl",
            "graphdancer_dpo",
            "preference_pairs",
            "ablations",
            "dancer_ablations",
        },
    }
    for asset, parents in reads.items():
        assert graph.get(key(asset)).parent_keys == {key(p) for p in parents}, asset
    assert graph.get(key("graph_snapshot")).parent_keys == set()
    grit = lambda a: dg.AssetKey(["grit", a])  # noqa: E731
    assert graph.get(grit("grain_checkpoint")).parent_keys == {grit("tasks")}
    assert graph.get(grit("eval_report")).parent_keys == {grit("tasks"), grit("grain_checkpoint")}
    assert graph.get(dg.AssetKey(["transfer", "matrix"])).parent_keys == {
        dg.AssetKey([d, a])
        for d in domains
        for a in ("graphcert_grpo", "graphdancer_rl", "graph_snapshot", "curriculum_splits", "certified_dataset")
    }


def test_code_versions_are_the_layers_code_digests() -> None:
    """One staleness rule: an asset's code_version is its layer's code digest, the digest of
    exactly the files its DVC stage depends on."""
    from components.store.digest import code_digest
    from orchestration.dvc import LAYERS

    graph = build_definitions().resolve_asset_graph()  # built now: the digests of the files as they are
    for key in graph.get_all_asset_keys():
        layer = LAYERS[key.path[-1]]
        assert graph.get(key).code_version == layer.code_version == code_digest(layer.code_modules), key
    assert (
        graph.get(dg.AssetKey(["academic", "qa_candidates"])).code_version
        != graph.get(dg.AssetKey(["academic", "checkpoints"])).code_version
    )


def test_default_domain_is_academic() -> None:
    assert default_domain(load_domains()) == "academic"


def test_domain_config_errors_are_clear(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: x\n")
    with pytest.raises(DomainConfigError, match="needs 'name' and 'source'"):
        load_domains(str(tmp_path))
    (tmp_path / "bad.yaml").write_text("name: academic\nsource: {format: csv, src: here}\n")
    with pytest.raises(DomainConfigError, match="already defined"):
        load_domains(str(tmp_path))
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    with pytest.raises(DomainConfigError, match="invalid YAML"):
        load_domains(str(tmp_path))
    # GraphDancer's default environment (Graph-CoT) warm-starts on the curriculum's trajectories
    src = "name: lab\nsource: {format: csv, src: here}\n"
    (tmp_path / "bad.yaml").write_text(src + "curriculum: {trajectories: false}\n")
    with pytest.raises(
        DomainConfigError, match="bad.yaml: train.dancer_env is graph_cot .* curriculum.trajectories is false"
    ):
        load_domains(str(tmp_path))
    (tmp_path / "bad.yaml").write_text(src + "curriculum: {trajectories: false}\ntrain: {dancer_env: python_cypher}\n")
    assert load_domains(str(tmp_path))["lab"].train.dancer_environment == "python_cypher"


def test_extra_domain_folder_adds_a_domain_with_relative_source(tmp_path: Path) -> None:
    (tmp_path / "movies.yaml").write_text("name: movies\nsource: {format: cypher-script, src: movies.cypher}\n")
    domains = load_domains(str(tmp_path))
    assert domains["movies"].source.src == str(tmp_path / "movies.cypher")
    built = build_definitions(domains, data_root=str(tmp_path / "data"))
    keys = {k.to_user_string() for k in built.resolve_asset_graph().get_all_asset_keys()}
    assert "movies/graph_snapshot" in keys


def test_environment_selects_domains_and_overrides_the_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHDOJO_DOMAINS", "ecommerce")
    domains = load_domains()
    assert list(domains) == ["ecommerce"] and default_domain(domains) == "ecommerce"  # the only one
    monkeypatch.setenv("GRAPHDOJO_DOMAINS", "ecommerce,nowhere")
    with pytest.raises(DomainConfigError, match="nowhere"):
        load_domains()
    monkeypatch.delenv("GRAPHDOJO_DOMAINS")
    monkeypatch.setenv("GRAPHDOJO_PRESET", "cpu-demo")
    assert {c.train.preset for c in load_domains().values()} == {"cpu-demo"}
    monkeypatch.setenv("GRAPHDOJO_PRESET", "gpu")  # needs base_model: a clear error, not a crash later
    with pytest.raises(DomainConfigError, match="GRAPHDOJO_PRESET='gpu'.*base_model"):
        load_domains()
    monkeypatch.delenv("GRAPHDOJO_PRESET")
    monkeypatch.setenv("GRAPHDOJO_TRAIN_SEED", "2")  # another training seed; nothing upstream changes
    seeded = load_domains()
    assert {c.train.seed for c in seeded.values()} == {2}
    monkeypatch.delenv("GRAPHDOJO_TRAIN_SEED")
    plain = load_domains()
    assert all(seeded[n].quiz == plain[n].quiz and seeded[n].source == plain[n].source for n in plain)
    monkeypatch.setenv("GRAPHDOJO_TRAIN_SEED", "-1")
    with pytest.raises(DomainConfigError, match="GRAPHDOJO_TRAIN_SEED='-1'"):
        load_domains()


def test_train_budgets_override_the_preset_and_are_checked() -> None:
    from components.training.checkpoint import PRESETS, TrainConfig, warm_start_params

    lora = TrainConfig.from_dict({"preset": "cpu-demo", "lora": {"r": 8}})
    assert lora.resolved()["lora"] == {"r": 8} and warm_start_params(lora)["lora"] == {"r": 8}
    assert "lora" not in TrainConfig.from_dict({"preset": "cpu-demo"}).resolved()  # full fine-tuning: unchanged
    with pytest.raises(ValueError, match="lora must be a mapping"):
        TrainConfig.from_dict({"lora": {"rank": 8}})
    # the shared-prefix loss is part of the warm start's fingerprint only when it is on
    shared = TrainConfig.from_dict({"preset": "cpu-demo", "share_prefix": True})
    assert warm_start_params(shared)["share_prefix"] is True
    assert warm_start_params(shared) != warm_start_params(TrainConfig.from_dict({"preset": "cpu-demo"}))
    assert "share_prefix" not in TrainConfig.from_dict({"preset": "cpu-demo", "share_prefix": False}).resolved()
    with pytest.raises(ValueError, match="share_prefix must be true or false"):
        TrainConfig.from_dict({"share_prefix": "yes"})

    cfg = TrainConfig.from_dict({"preset": "cpu-demo", "budgets": {"rl_steps": 5}, "max_steps": 3})
    resolved = cfg.resolved()
    assert resolved["rl_steps"] == 5 and resolved["max_steps"] == 3
    assert resolved["dancer_steps"] == PRESETS["cpu-demo"]["dancer_steps"] and "budgets" not in resolved
    with pytest.raises(ValueError, match="unknown budgets \\['rl_stepz'\\]"):
        TrainConfig.from_dict({"budgets": {"rl_stepz": 5}})
    with pytest.raises(ValueError, match="positive number"):
        TrainConfig.from_dict({"budgets": {"rl_steps": -1}})
    # the probe and the validation curve may be switched off, nothing else
    off = TrainConfig.from_dict({"preset": "cpu-demo", "budgets": {"rl_probe": 0, "rl_val_questions": 0}})
    assert off.resolved()["rl_probe"] == 0 and off.resolved()["rl_val_questions"] == 0
    with pytest.raises(ValueError, match="positive number"):
        TrainConfig.from_dict({"budgets": {"rl_steps": 0}})
    with pytest.raises(ValueError, match="or 0: off"):
        TrainConfig.from_dict({"budgets": {"rl_probe": -1}})
