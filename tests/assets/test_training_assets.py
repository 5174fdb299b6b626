"""The training layer end to end on the real graph, sandbox and a real tiny model (cpu-tiny):
curriculum splits, a warm-start checkpoint with its model card, the RL stages from it, the
preference pairs, and GRAIN on the GRIT-style tasks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest
from transformers import AutoModelForCausalLM

from assets.artifacts import pipeline_resources
from assets.certification import certified_dataset_asset
from assets.evaluation import eval_reports_asset, grit_eval_asset
from assets.generation import grit_tasks_asset, qa_candidates_asset
from assets.graph import graph_snapshot_asset
from assets.training import (
    ablations_asset,
    checkpoints_asset,
    curriculum_splits_asset,
    dancer_ablations_asset,
    grain_checkpoint_asset,
    preference_pairs_asset,
    rl_stage_assets,
)
from components.certify.dataset import CertifyConfig
from components.evaluation.agents import EvalConfig
from components.evaluation.grit import GritConfig
from components.graph.snapshot import SourceSpec
from components.quizzer.run import QuizConfig
from components.training.ablations import ablations_from
from components.training.checkpoint import TrainConfig

SOURCE = SourceSpec("generator", "biomedical", {"seed": 3, "scale": 200})


def _materialized(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    return {
        e.asset_key.path[-1]: e.event_specific_data.materialization.metadata
        for e in result.get_asset_materialization_events()
    }


def test_checkpoint_from_the_training_split(tmp_path: Path) -> None:
    from components.llm.models import tiny_random_model

    # GraphDancer here as GRPO in the Python + Cypher sandbox, both options (its defaults — PPO
    # with the critic warm-up, in the Graph-CoT API — are the next test's)
    train = TrainConfig(preset="cpu-tiny", max_steps=6, threads=1, dancer_stage1="grpo", dancer_env="python_cypher")
    judge = str(tiny_random_model(tmp_path / "judge", seed=1))
    evaluate = EvalConfig(
        samples=2, max_questions=2, max_turns=1, max_new_tokens=8, threads=1, judge_model=judge, grit_per_split=2
    )
    defs = [
        *graph_snapshot_asset("bio", SOURCE),
        *qa_candidates_asset("bio", QuizConfig(template_n=16, llm_n=0, seed=2)),
        *certified_dataset_asset("bio", CertifyConfig(fault_sample=0)),
        *curriculum_splits_asset("bio"),
        *checkpoints_asset("bio", train),
        *rl_stage_assets("bio", train),
        *preference_pairs_asset("bio", train),
        *grit_tasks_asset(GritConfig(train=8, test=4, ood=4, large=2, sizes=(5, 8), large_sizes=(9, 12))),
        *grain_checkpoint_asset(train),
        *ablations_asset(
            "bio",
            train,
            ablations_from(
                [
                    {"name": "strict-only", "data": "strict"},
                    {"name": "no-evidence-reward", "reward": "answer_only"},
                    {"name": "uncertified-sft", "data": "uncertified", "stage": "sft", "seeds": [0, 1]},
                ]
            ),
        ),
        *dancer_ablations_asset("bio", train),
        *eval_reports_asset("bio", train, evaluate),
        *grit_eval_asset(train, evaluate),
    ]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(defs, resources=pipeline_resources(str(tmp_path)), instance=instance)
    assert result.success
    materialized = _materialized(result)
    meta = materialized["checkpoints"]
    folder = Path(meta["path"].value)
    assert meta["examples"].value > 0 and meta["last_loss"].value < meta["first_loss"].value
    assert (folder / "config.json").is_file() and (folder / "README.md").is_file()
    card = (folder / "README.md").read_text()
    assert "Data fingerprint" in card and "cpu-tiny" in card and "environment tokens masked" in card
    log = json.loads((folder / "training_log.json").read_text())
    assert len(log["losses"]) == 6
    AutoModelForCausalLM.from_pretrained(folder)  # a loadable Hugging Face folder
    assert "step   1" in meta["loss_curve"].value and meta["method"].value == "sft-warm-start"
    # its teacher data: coverage per template family and relationship use, the decision-token share
    families = {r.data["template family"]: r.data["count"] for r in meta["teacher_families"].value.records}
    assert sum(families.values()) == meta["examples"].value and all(" × " in f for f in families)
    assert meta["teacher_relationships"].value.records and 0.0 < meta["decision_token_share"].value < 1.0
    assert "## Teacher data" in card

    # certified rejection-sampling fine-tuning: cpu-tiny's two rounds, their counts and pass@k curve
    rft = materialized["graphcert_rft"]
    assert rft["method"].value == "graphcert-rft" and rft["trained"].value is True
    rounds = rft["question_selection"].value["rounds"]
    assert [r["round"] for r in rounds] == [1, 2] and all(r["sampled"] == 4 * 2 for r in rounds)
    assert all(r["kept"] + sum(r["rejected"].values()) == r["sampled"] for r in rounds)
    assert [r.data["step"] for r in rft["validation_curve"].value.records] == [0, 1, 2]
    AutoModelForCausalLM.from_pretrained(Path(rft["path"].value))
    assert not list((tmp_path / "work").rglob("round-*.json"))  # the resume folder goes once the stage lands
    assert not list((tmp_path / "work").rglob("checkpoint-*"))  # GraphCert GRPO's too
    pairs = materialized["preference_pairs"]
    # a random tiny model never answers: every pool is uniformly failed, so no pair is kept …
    assert pairs["questions"].value == 3 and pairs["trajectories"].value == 12 and pairs["pairs"].value == 0
    assert pairs["pairs_per_question"].value == 0.0
    assert {r.data["reason"]: r.data["count"] for r in pairs["dropped"].value.records} == {"uniformly_failed": 3}
    # … and stage 2 (DPO) trains nothing and says so (the run still succeeds, downstream still runs)
    dpo = materialized["graphdancer_dpo"]
    assert dpo["trained"].value is False and "0 preference pairs" in dpo["reason"].value and "path" not in dpo

    for stage, method in (
        ("graphcert_grpo", "graphcert-grpo"),
        ("graphdancer_rl", "graphdancer-rl"),
        ("grain_checkpoint", "grain"),
    ):
        m = materialized[stage]
        folder = Path(m["path"].value)
        assert m["method"].value == method and (folder / "config.json").is_file() and (folder / "curves.png").is_file()
        card = (folder / "README.md").read_text()
        assert "## Training curves" in card and method in card
        steps = [r.data for r in m["curves"].value.records]
        rl_steps = [r for r in steps if r["reward"] is not None]
        assert len(rl_steps) == 2  # the preset's two RL steps, each with its reward, KL and tool-call rate
        assert all(r["kl"] is not None and 0.0 <= r["tool_call_rate"] <= 1.0 for r in rl_steps)
        assert "reward_curve" in m and "kl_curve" in m and "tool_call_rate_curve" in m
        assert all(0.0 <= r["nonzero_advantage"] <= 1.0 for r in rl_steps)
        if stage != "grain_checkpoint":
            # the probe chose the training questions; the validation curve before and after each step
            sel = m["question_selection"].value
            assert sel["probed"] == 4 and sel["samples"] == 2 and sel["selected"] == 4
            assert sel["never"] + sel["sometimes"] + sel["always"] <= 4
            val = [r.data for r in m["validation_curve"].value.records]
            assert [v["step"] for v in val] == [0, 1, 2] and all(v["episodes"] == 2 for v in val)
            assert all(0.0 <= v["answer_f1"] <= 1.0 and 0.0 <= v["evidence"] <= 1.0 for v in val)  # the reward's terms
            assert "## Validation reward" in card and "## Training questions" in card
        AutoModelForCausalLM.from_pretrained(folder)
    assert "Stage 1 ran GRPO" in (Path(materialized["graphdancer_rl"]["path"].value) / "README.md").read_text()
    grain_steps = [r.data for r in materialized["grain_checkpoint"]["curves"].value.records]
    assert len(grain_steps) == 6 + 2  # SFT steps (preset grain_sft_steps), then the GRPO steps
    assert materialized["tasks"]["items"].value == 18

    # the evaluation: every system side by side on the test split; the untrained DPO listed as such
    ev = materialized["eval_reports"]
    rows = {r.data["system"]: r.data for r in ev["systems"].value.records}
    assert list(rows) == [
        "answer prior",
        "closed book",
        "base (before training)",
        "base few-shot",
        "graph-cot zero-shot",
        "graphrag",
        "sft-only",
        "graphcert-rft",
        "graphcert-grpo",
        "graphdancer-rl",
        "graphdancer-rl→dpo",
        "ablation: strict-only",
        "ablation: no-evidence-reward",
        "ablation: uncertified-sft",
    ]
    abl = {r.data["name"]: r.data for r in materialized["ablations"]["ablations"].value.records}
    assert abl["strict-only"]["data"] == "strict" and abl["no-evidence-reward"]["reward"] == "answer_only"
    records = [r.data for r in materialized["ablations"]["ablations"].value.records]
    sft = [r for r in records if r["name"] == "uncertified-sft"]  # SFT from the base model, one per seed
    assert [(r["stage"], r["seed"]) for r in sft] == [("sft", 0), ("sft", 1)]
    assert all(r["examples"] > 0 and r["last_loss"] is not None and r["reused"] is False for r in sft)
    assert abl["strict-only"]["stage"] == "grpo" and abl["strict-only"]["seed"] == 0
    row = rows["ablation: uncertified-sft"]  # one row over both seeds: its CI resamples them
    assert "SFT from the base model" in row["method"] and "× 2 seeds" in row["questions × samples"]
    paired = {r.data["difference"] for r in ev["paired"].value.records}
    assert "ablation: strict-only − ablation: uncertified-sft" not in paired  # GRPO arms are not the ablation's
    assert rows["graphdancer-rl→dpo"]["note"].startswith("not trained")
    assert all("[" in r["F1"] for n, r in rows.items() if n != "graphdancer-rl→dpo")  # every available one: a CI
    assert all("EM non-bool" in r and "grounded EM" in r for n, r in rows.items() if n != "graphdancer-rl→dpo")
    assert rows["answer prior"]["VF"] != "–" and ev["by_answer_type"].value.records
    assert ev["judge_model"].value == judge and ev["seeds"].value == [0, 1]
    page = Path(ev["report_html"].value).read_text()
    assert "data:image/png;base64," in page and "P(EM|EH)" in page and "premature_stop" in page
    assert "## sft-only — test" in Path(ev["transcripts"].value).read_text()  # the episodes, to read
    assert "paired differences" in page and "sft-only − base (before training)" in page
    assert "sft-only − answer prior" in page and "By answer type" in page.replace("by answer type", "By answer type")
    grit = materialized["eval_report"]
    overview = {r.data["system"]: r.data for r in grit["overview"].value.records}
    assert set(overview) == {"base (before training)", "grain"} and grit["items"].value == 6  # 2 test, OOD, large
    assert overview["grain"]["accuracy (large)"] != "–"
    assert "variance across namings" in overview["grain"] and "ID − OOD gap" in overview["grain"]


def test_graphdancer_in_its_own_graph_cot_environment(tmp_path: Path) -> None:
    """GraphDancer as published, by default (no ``dancer_*`` option, the default curriculum): a
    warm start on the curriculum's Graph-CoT teacher trajectories, stage 1 as PPO with a critic
    warmed up first, the preference pairs and the evaluation rows in the Graph-CoT API, and the
    three ablations as report rows — on the real graph, environment and tiny model."""
    from components.llm.models import tiny_random_model

    train = TrainConfig(
        preset="cpu-tiny",
        max_steps=4,
        threads=1,
        dancer_ablations=["no_ppo", "no_dpo", "no_curriculum"],
        budgets={"rl_val_questions": 0},
    )
    judge = str(tiny_random_model(tmp_path / "judge", seed=1))
    evaluate = EvalConfig(
        samples=1, max_questions=2, max_turns=1, max_new_tokens=8, threads=1, judge_model=judge, few_shot=0
    )
    d = "acad"
    defs = [
        *graph_snapshot_asset(d, SourceSpec("generator", "academic", {"seed": 0, "scale": 300})),
        *qa_candidates_asset(d, QuizConfig(template_n=30, llm_n=0, seed=4)),
        *certified_dataset_asset(d, CertifyConfig(fault_sample=0)),
        *curriculum_splits_asset(d),
        *checkpoints_asset(d, train),
        *rl_stage_assets(d, train),
        *preference_pairs_asset(d, train),
        *ablations_asset(d, train, ()),
        *dancer_ablations_asset(d, train),
        *eval_reports_asset(d, train, evaluate),
    ]
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize(defs, resources=pipeline_resources(str(tmp_path)), instance=instance)
    assert result.success
    m = _materialized(result)
    assert m["curriculum_splits"]["teacher_trajectories"].value > 0
    stage1 = Path(m["graphdancer_rl"]["path"].value)
    warm = stage1 / "warm_start"
    AutoModelForCausalLM.from_pretrained(warm)  # the Graph-CoT warm start, a loadable folder
    assert json.loads((warm / "training_log.json").read_text())["method"] == "graphdancer-warm-start"
    assert len(json.loads((warm / "training_log.json").read_text())["losses"]) == 4
    card = (stage1 / "README.md").read_text()
    assert "Environment: the Graph-CoT function API" in card and "Stage 1 ran PPO with a critic" in card
    assert "the first 1 step(s) train the critic alone" in card  # cpu-tiny: one of its two steps
    assert json.loads((stage1 / "ppo_log.json").read_text())["curves"][0]["critic_only"]
    rl_steps = [r.data for r in m["graphdancer_rl"]["curves"].value.records]
    assert len(rl_steps) == 2 and all(0.0 <= r["tool_call_rate"] <= 1.0 for r in rl_steps)
    pairs = m["preference_pairs"]
    assert pairs["trajectories"].value == pairs["questions"].value * 4 > 0
    ablations = {r.data["ablation"]: r.data for r in m["dancer_ablations"]["ablations"].value.records}
    assert set(ablations) == {"NoPPO", "NoDPO", "NoCurriculum"}
    assert ablations["NoDPO"]["folder"] == "graphdancer-rl" and ablations["NoCurriculum"]["trained"]
    rows = {r.data["system"]: r.data for r in m["eval_reports"]["systems"].value.records}
    assert list(rows)[-3:] == [
        "ablation: GraphDancer NoPPO",
        "ablation: GraphDancer NoDPO",
        "ablation: GraphDancer NoCurriculum",
    ]
    assert "graphdancer warm start" in rows and "[" in rows["graphdancer warm start"]["F1"]
    report = json.loads((Path(m["eval_reports"]["report_html"].value).parent / "report.json").read_text())
    systems = report["systems"]
    for name in (
        "graph-cot zero-shot",
        "graphdancer warm start",
        "graphdancer-rl",
        "ablation: GraphDancer NoCurriculum",
    ):
        assert systems[name]["kind"] == "graph_cot", name
    assert systems["graphdancer-rl"]["method"] == "GraphDancer stage 1 (PPO, Graph-CoT API)"
    assert systems["sft-only"]["kind"] == "python_cypher"  # GraphCert's rows stay in the sandbox
    assert systems["ablation: GraphDancer NoDPO"]["summary"] == systems["graphdancer-rl"]["summary"]
    assert [r for r in report["records"] if r["system"] == "graphdancer-rl"]


def test_train_config_validation() -> None:
    assert TrainConfig.from_dict({"preset": "cpu-demo"}).resolved()["max_steps"] == 24
    assert TrainConfig.from_dict({"preset": "cpu-tiny", "max_steps": 3}).resolved()["max_steps"] == 3
    with pytest.raises(ValueError, match="preset"):
        TrainConfig.from_dict({"preset": "tpu"})
    with pytest.raises(ValueError, match="base_model"):
        TrainConfig.from_dict({"preset": "gpu"})
    with pytest.raises(ValueError, match="unknown train options"):
        TrainConfig.from_dict({"epochs": 3})
    with pytest.raises(ValueError, match="dancer_env"):
        TrainConfig.from_dict({"dancer_env": "cypher"})
    with pytest.raises(ValueError, match="dancer_ablations: unknown"):
        TrainConfig.from_dict({"dancer_ablations": ["no_sft"]})
    # the default environment spelled out is the default (same fingerprints); GraphCert's stages
    # do not depend on GraphDancer's choices
    spelled = TrainConfig.from_dict({"preset": "cpu-demo", "dancer_env": "graph_cot", "dancer_ablations": ["no_dpo"]})
    sandbox = TrainConfig.from_dict({"preset": "cpu-demo", "dancer_env": "python_cypher"})
    default = TrainConfig.from_dict({"preset": "cpu-demo"})
    assert spelled.resolved() == default.resolved() and sandbox.resolved() != default.resolved()
    assert sandbox.resolved_without_dancer() == default.resolved_without_dancer()


def test_mechanics_only_stages_train_the_tiny_model_and_say_so(tmp_path: Path) -> None:
    from components.evaluation.run import MECHANICS_NOTE, eval_systems
    from components.store.artifact import Artifact
    from components.training.checkpoint import stage_start

    train = TrainConfig.from_dict(
        {
            "preset": "cpu-demo",
            "dancer_stage1": "grpo",
            "dancer_env": "python_cypher",
            "mechanics_only": ["graphdancer_rl", "ablations"],
        }
    )
    assert train.for_stage("checkpoints") is train and train.for_stage("graphcert_grpo") is train
    tiny = train.for_stage("graphdancer_rl")
    assert tiny.preset == "cpu-tiny" and not tiny.mechanics_only and tiny.seed == train.seed
    assert train.resolved()["mechanics_only"] == ["graphdancer_rl", "ablations"]  # part of the fingerprint
    assert stage_start(train, "graphcert_grpo", "/models/warm", tmp_path) == Path("/models/warm")
    tiny_base = stage_start(train, "ablations", "/models/warm", tmp_path)
    assert tiny_base.is_relative_to(tmp_path) and (tiny_base / "config.json").is_file()
    with pytest.raises(ValueError, match="unknown stages"):
        TrainConfig.from_dict({"mechanics_only": ["checkpoints"]})  # the warm start is never mechanics only
    with pytest.raises(ValueError, match="list of stage names"):
        TrainConfig.from_dict({"mechanics_only": "ablations"})

    def art(layer: str, **kw) -> Artifact:
        return Artifact(layer, "lab", f"fp-{layer}", f"/models/{layer}", **kw)

    inputs = {
        "checkpoint": art("checkpoints"),
        "rft": art("graphcert_rft"),
        "graphcert": art("graphcert_grpo"),
        "dancer_rl": art("graphdancer_rl"),
        "pairs": art("preference_pairs"),
        "dancer_dpo": art("graphdancer_dpo", parents=("fp-preference_pairs",)),
        "ablations": art(
            "ablations",
            summary={
                "ablations": [
                    {"name": "strict-only", "folder": "s", "data": "strict", "items": 3, "reward": "graphcert"}
                ]
            },
        ),
    }
    systems = {
        s.name: s for s in eval_systems(inputs, "/models/base", train=train, only=["sft-only", "graphdancer-rl"])
    }
    assert systems["graphdancer-rl"].model_dir and systems["graphdancer-rl"].note == MECHANICS_NOTE
    assert systems["sft-only"].model_dir and systems["sft-only"].note == ""
    skipped = [n for n, s in systems.items() if s.model_dir is None]
    assert set(skipped) == set(systems) - {"sft-only", "graphdancer-rl"}
    assert all("eval.systems" in systems[n].note for n in skipped)
    everything = {s.name: s for s in eval_systems(inputs, "/models/base", train=train)}
    assert everything["ablation: strict-only"].note == MECHANICS_NOTE and everything["graphdancer-rl→dpo"].model_dir
    assert everything["graphdancer-rl"].method == "GraphDancer stage 1 (GRPO, Python + Cypher sandbox)"
    ppo = {s.name: s for s in eval_systems(inputs, "/models/base", train=replace(train, dancer_stage1="ppo"))}
    assert ppo["graphdancer-rl"].method == "GraphDancer stage 1 (PPO, Python + Cypher sandbox)"  # what ran
    # GraphDancer in its own environment (the default): its rows (and the zero-shot Graph-CoT base
    # row) play the Graph-CoT API with the turns it trained with; GraphCert's rows stay in the sandbox
    cot_train = TrainConfig(preset="cpu-demo")
    cot = {s.name: s for s in eval_systems(inputs, "/models/base", train=cot_train)}
    assert cot["graphdancer-rl"].method == "GraphDancer stage 1 (PPO, Graph-CoT API)"
    assert cot["graphdancer-rl→dpo"].method == "GraphDancer PPO stage 1 → DPO (Graph-CoT API)"
    turns = cot_train.resolved()["dancer_turns"]
    for name in ("graph-cot zero-shot", "graphdancer-rl", "graphdancer-rl→dpo"):
        assert cot[name].kind == "graph_cot" and cot[name].max_turns == turns, name
    assert cot["sft-only"].kind == "python_cypher" and cot["sft-only"].max_turns is None
    assert cot["graphdancer warm start"].model_dir is None  # /models/graphdancer_rl holds no warm start
    assert cot["graphdancer warm start"].note.startswith("not trained")
    # the ablations' rows: in GraphDancer's environment, NoDPO reusing stage 1's answers, an
    # untrained one listed with why, and flagged when their stage trains the tiny model
    inputs["dancer_ablations"] = art(
        "dancer_ablations",
        summary={
            "ablations": [
                {"name": "no_ppo", "label": "NoPPO", "folder": "no_ppo", "trained": True},
                {"name": "no_dpo", "label": "NoDPO", "folder": None, "trained": True, "same_as": "graphdancer-rl"},
                {"name": "no_curriculum", "label": "NoCurriculum", "folder": None, "reason": "0 preference pairs"},
            ]
        },
    )
    cot = {s.name: s for s in eval_systems(inputs, "/models/base", train=cot_train)}
    no_ppo, no_dpo, no_cur = (cot[f"ablation: GraphDancer {n}"] for n in ("NoPPO", "NoDPO", "NoCurriculum"))
    assert no_ppo.model_dir.endswith("/no_ppo") and no_ppo.kind == "graph_cot"
    assert no_ppo.max_turns == turns and "Graph-CoT API" in no_ppo.method
    assert no_dpo.same_as == "graphdancer-rl" and no_dpo.model_dir == "/models/graphdancer_rl"
    assert no_cur.model_dir is None and "0 preference pairs" in no_cur.note
    flagged = {
        s.name: s
        for s in eval_systems(inputs, "/models/base", train=replace(cot_train, mechanics_only=("graphdancer_rl",)))
    }
    assert flagged["ablation: GraphDancer NoPPO"].mechanics and not flagged["sft-only"].mechanics
    with pytest.raises(ValueError, match="unknown systems"):
        eval_systems(inputs, "/models/base", only=["sft"])
    with pytest.raises(ValueError, match="list of system names"):
        EvalConfig(systems="sft-only")
