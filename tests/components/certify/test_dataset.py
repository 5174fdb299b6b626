"""The certified table, its funnel, its quality checks and the certifier's accuracy report, on a
real demo graph with real template candidates (and a real quizzer failure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.certify.accuracy import THRESHOLDS, AccuracyReport, FaultStats, fault_accuracy
from components.certify.dataset import (
    CERTIFIED_DATASET,
    FUNNEL_RATES,
    CertifyConfig,
    funnel,
    funnel_chart,
    funnel_rates,
    read_certified,
    run_certification,
    write_certified,
)
from components.certify.faults import FAULTS
from components.certify.quality import leakage_in_admitted, reverify_admitted, run_expectations
from components.cypher.query_path import ReadOnlyQueryPath
from components.graph.ladybug import LadybugBackend
from components.graph.load import load_graph
from components.graph.sources.demo import generate
from components.quizzer.candidate import QACandidate
from components.quizzer.template import TemplateQuizzer
from components.store.artifact import Artifact


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("dataset")
    db = root / "db"
    load_graph(generate("biomedical", seed=0, scale=200), db)
    with LadybugBackend(db) as backend:
        schema = backend.schema()
        fp = backend.fingerprint()
        cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=2).generate(14)
    for c in cands:
        c.meta["snapshot_fingerprint"] = fp
    failed = QACandidate.from_record(cands[0].to_record())
    failed.id = "failed-1"
    cands.append(failed.fail("code_error", "the program raised"))
    start = next(c.start_node for c in cands if c.ok and c.start_node)
    ev = root / "eval.jsonl"
    ev.write_text(json.dumps({"qid": "q1", "question": "held out", "answer": "", "entities": [start["id"]]}) + "\n")
    config = CertifyConfig(eval_questions=str(ev), fault_sample=3)
    run = run_certification(cands, str(db), config)
    return {"db": str(db), "cands": cands, "run": run, "config": config, "root": root, "fp": fp, "schema": schema}


def test_rows_carry_status_verdict_leakage_and_admission(demo) -> None:
    rows = demo["run"].rows
    assert [r["id"] for r in rows] == [c.id for c in demo["cands"]]
    by_id = {r["id"]: r for r in rows}
    assert by_id["failed-1"]["status"] == "hard_failure" and by_id["failed-1"]["reasons"] == ["quizzer_failure"]
    assert by_id["failed-1"]["verdict"] == "not_judged" and not by_id["failed-1"]["admitted"]
    for r in rows:
        cert = json.loads(r["certificate_json"])
        assert cert["status"] == r["status"] and cert["reasons"] == r["reasons"]
        certified = r["status"] in ("strict", "partial")
        assert r["admitted"] == (certified and not r["leaked"])
        if certified:
            assert r["verdict"] == "skipped"
    leaked = [r for r in rows if r["leaked"]]
    assert leaked and demo["run"].leakage_report["leaked"] == len(leaked)
    assert sum(r["admitted"] for r in rows) >= 8


def test_funnel_counts_add_up_and_render(demo) -> None:
    rows = demo["run"].rows
    stages = funnel(rows)
    d = dict(stages)
    assert [s for s, _ in stages][:2] == ["candidates", "hard_failure"] and stages[-1][0] == "admitted"
    assert d["candidates"] == len(rows) == d["hard_failure"] + d["strict"] + d["partial"]
    assert d["hard_failure"] == sum(v for k, v in d.items() if k.startswith("hard_failure:"))
    assert d["judge:skipped"] == d["strict"] + d["partial"] and "judge:accept" not in d
    assert d["admitted"] == d["judge:skipped"] - d["leakage_dropped"] - d["judge_off:partial_held_back"]
    rates = funnel_rates(rows)
    assert set(rates) == set(FUNNEL_RATES) and all(0.0 <= v <= 1.0 for v in rates.values())
    assert rates["admitted_rate"] == d["admitted"] / len(rows)
    chart = funnel_chart(stages)
    assert chart.startswith("```") and "admitted" in chart and "█" in chart


def test_judged_funnel_lists_every_verdict() -> None:
    rows = [
        {"status": "strict", "reasons": [], "verdict": v, "leaked": False, "admitted": v == "accept"}
        for v in ("accept", "accept", "reject", "uncertain")
    ]
    rows.append(
        {
            "status": "hard_failure",
            "reasons": ["direction_error"],
            "verdict": "not_judged",
            "leaked": False,
            "admitted": False,
        }
    )
    d = dict(funnel(rows))
    assert (d["judge:accept"], d["judge:reject"], d["judge:uncertain"]) == (2, 1, 1)
    assert d["hard_failure:direction_error"] == 1 and d["admitted"] == 2


def test_the_admission_rule_and_the_funnel_it_shows() -> None:
    from components.certify.dataset import admit

    off, opt_in, on = CertifyConfig(), CertifyConfig(admit_partial_without_judge=True), CertifyConfig(judge="on")
    assert [admit(s, "skipped", False, off) for s in ("strict", "partial", "hard_failure")] == [True, False, False]
    assert [admit(s, "skipped", False, opt_in) for s in ("strict", "partial", "hard_failure")] == [True, True, False]
    assert [admit("partial", v, False, on) for v in ("accept", "reject", "uncertain")] == [True, False, False]
    assert not admit("strict", "skipped", True, off) and not admit("strict", "accept", True, on)
    rows = [
        {"status": st, "reasons": [], "verdict": "skipped", "leaked": lk, "admitted": admit(st, "skipped", lk, off)}
        for st, lk in (("strict", False), ("partial", False), ("partial", True), ("strict", True))
    ]
    d = dict(funnel(rows))
    assert (d["judge_off:partial_held_back"], d["leakage_dropped"], d["admitted"]) == (1, 2, 1)
    with pytest.raises(ValueError, match="admit_partial_without_judge"):
        CertifyConfig(admit_partial_without_judge="yes")


def test_accuracy_report_meets_the_thresholds(demo) -> None:
    report = demo["run"].accuracy
    assert report is not None and report.passed, report.to_json()
    assert set(report.faults) == set(FAULTS)
    assert all(f.injected >= 1 and f.recall == 1.0 and f.reason_recall == 1.0 for f in report.faults.values())
    assert report.false_reject_rate == 0.0 and report.untouched >= 8


def test_accuracy_passed_applies_the_thresholds() -> None:
    def report(recall_hits: int, false_rejects: int) -> AccuracyReport:
        stats = {"f": FaultStats("f", ["x"], injected=100, hard_failures=recall_hits, expected_reason=recall_hits)}
        return AccuracyReport(stats, untouched=100, false_rejects=false_rejects)

    assert report(99, 2).passed
    assert not report(98, 0).passed  # recall 0.98 < 0.99
    assert not report(100, 3).passed  # false rejects 0.03 > 0.02
    empty = AccuracyReport({"f": FaultStats("f", ["x"])}, untouched=10, false_rejects=0)
    assert not empty.passed  # a fault type never injected proves nothing
    assert THRESHOLDS == {"recall": 0.99, "false_reject_rate": 0.02}


def test_a_blind_certifier_would_fail_the_report(demo) -> None:
    """The report measures the certifier it is given: with grounding disabled (every candidate
    passes check 4), faults only check 4 can catch are missed and ``passed`` is False."""
    import components.certify.certifier as certifier

    certified = [c for c in demo["cands"] if c.ok]
    original = certifier._check_4
    certifier._check_4 = lambda cand, ctx, results, checks: certifier._outcome(checks)
    try:
        with LadybugBackend(demo["db"]) as backend:
            report = fault_accuracy(
                certified,
                schema=demo["schema"],
                query_path=ReadOnlyQueryPath(backend, schema=demo["schema"]),
                fingerprint=demo["fp"],
                per_fault=2,
            )
    finally:
        certifier._check_4 = original
    assert not report.passed
    assert report.faults["swapped_answer"].recall == 0.0


def test_expectations_pass_on_the_table_and_catch_broken_rows(demo, tmp_path: Path) -> None:
    rows = demo["run"].rows
    path = write_certified(rows, tmp_path / "c.parquet")
    stored = read_certified(path)
    assert run_expectations(stored)["passed"]
    bad = [dict(r) for r in stored]
    hard = next(r for r in bad if r["status"] == "hard_failure")
    hard["admitted"] = True  # a hard failure admitted
    bad[1]["id"] = bad[2]["id"]  # a duplicate id
    out = run_expectations(bad)
    assert not out["passed"]
    failed = {(r["expectation"], r["column"], r["condition"]) for r in out["results"] if not r["success"]}
    assert ("expect_column_values_to_be_unique", "id", None) in failed
    assert ("expect_column_values_to_be_in_set", "status", "admitted == True") in failed
    assert ("expect_column_values_to_be_in_set", "verdict", "admitted == True") in failed


def test_reverification_catches_an_admitted_row_changed_after_certification(demo) -> None:
    rows = [dict(r) for r in demo["run"].rows]
    assert reverify_admitted(rows, demo["db"])["passed"]
    victim = next(r for r in rows if r["admitted"] and r["answer_type"] == "number")
    victim["answer_value_json"] = json.dumps(json.loads(victim["answer_value_json"]) + 1)
    victim["answer"] = str(json.loads(victim["answer_value_json"]))
    out = reverify_admitted(rows, demo["db"])
    assert not out["passed"] and out["failures"] == [{"id": victim["id"], "reasons": ["answer_evidence_mismatch"]}]


def test_leakage_recheck_flags_leaked_admitted_rows(demo) -> None:
    rows = [dict(r) for r in demo["run"].rows]
    ev = demo["config"].eval_questions
    assert leakage_in_admitted(rows, ev, demo["db"])["passed"]
    leaked = next(r for r in rows if r["leaked"])
    leaked["admitted"] = True
    out = leakage_in_admitted(rows, ev, demo["db"])
    assert not out["passed"] and out["leaked"] == 1 and out["examples"][0]["id"] == leaked["id"]
    assert leakage_in_admitted(rows, None, demo["db"])["note"].startswith("no evaluation set")


def test_config_validation_and_fingerprint(tmp_path: Path) -> None:
    assert CertifyConfig.from_dict({"judge": False}).judge == "off"  # YAML's bare `off`
    assert CertifyConfig.from_dict({"judge": True}).judge == "on"
    for bad, match in (
        ({"judge": "maybe"}, "judge"),
        ({"bands": {"nope": [0, 1]}}, "unknown funnel rate"),
        ({"bands": {"admitted_rate": [0.9, 0.1]}}, "band"),
        ({"colour": 1}, "unknown certify"),
        ({"fault_sample": -1}, "fault_sample"),
        ({"judge_stages": ["rederive", "vibes"]}, "judge_stages"),
        ({"judge_stages": []}, "judge_stages"),
        ({"judge_stages": "review"}, "judge_stages"),
        ({"judge_samples": 0}, "judge_samples"),
    ):
        with pytest.raises(ValueError, match=match):
            CertifyConfig.from_dict(bad)
    ev = tmp_path / "eval.jsonl"
    ev.write_text('{"question": "a", "answer": "b"}\n')
    cfg = CertifyConfig.from_dict({"eval_questions": "eval.jsonl"}, base=tmp_path)
    assert cfg.eval_questions == str(ev.resolve())

    def fingerprint(cands: str, config: CertifyConfig) -> str:
        inputs = {
            "candidates": Artifact("qa_candidates", "d", cands, None),
            "snapshot": Artifact("graph_snapshot", "d", "g", None),
        }
        return CERTIFIED_DATASET.fingerprint(inputs, config)

    a = fingerprint("cands", cfg)
    assert a == fingerprint("cands", cfg) != fingerprint("other", cfg)
    ev.write_text('{"question": "c", "answer": "d"}\n')  # a changed eval set is a new dataset
    assert fingerprint("cands", cfg) != a
    assert fingerprint("cands", CertifyConfig(judge="on")) != fingerprint("cands", CertifyConfig())
    # how the judge runs identifies the dataset only when it runs
    on = fingerprint("cands", CertifyConfig(judge="on"))
    assert fingerprint("cands", CertifyConfig(judge="on", judge_stages=["review"])) != on
    assert fingerprint("cands", CertifyConfig(judge="on", judge_samples=5)) != on
    assert fingerprint("cands", CertifyConfig(judge_samples=5)) == fingerprint("cands", CertifyConfig())
    assert CertifyConfig.from_dict({"judge_stages": ["review", "rederive"]}).judge_stages == ("review", "rederive")
    assert CertifyConfig(judge="on").judge_kwargs()["model_dir"] == "qwen2.5-coder-0.5b"  # a general registered model
