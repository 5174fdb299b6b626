"""Evaluation metrics and the report on crafted records: outcomes, conditionals, CIs, breakdowns,
and a self-contained HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.evaluation.metrics import EvalRecord, bootstrap_ci, breakdown, records_from, summarize
from components.evaluation.report import data_tables, main_table, write_report


def _rec(seed: int, qid: str, answer: str | None, gold: str = "Ada", **kw) -> EvalRecord:
    return EvalRecord(system="s", seed=seed, question_id=qid, question=f"q{qid}", gold=gold, answer=answer, **kw)


def test_outcomes_are_exclusive_and_ordered() -> None:
    assert _rec(0, "1", "ada", valid_format=False).outcome == "correct"  # EM first
    assert _rec(0, "1", None, halted=True).outcome == "loop_timeout"
    assert _rec(0, "1", None, truncated=True).outcome == "loop_timeout"
    assert _rec(0, "1", None).outcome == "invalid_format"
    assert _rec(0, "1", "Bob", valid_format=False).outcome == "invalid_format"
    assert _rec(0, "1", "Bob", valid_format=True).outcome == "premature_stop"


def test_summary_metrics_and_conditionals() -> None:
    recs = [
        _rec(0, "1", "Ada", valid_format=True, evidence_hit=True, valid_calls=2, judge=True, tokens=10),
        _rec(0, "2", "Bob", valid_format=True, evidence_hit=True, valid_calls=1, judge=False, tokens=20),
        _rec(0, "3", None, evidence_hit=False, halted=True, judge=False, tokens=30),
        _rec(0, "4", "Ada", valid_format=True, evidence_hit=False, judge=True, tokens=40),
    ]
    s = summarize(recs, draws=50)
    assert s["em"] == 0.5 and s["judge"] == 0.5 and s["vf"] == 0.75 and s["vc"] == 0.75 and s["eh"] == 0.5
    assert s["p_em_given_eh"] == 0.5 and s["p_em_given_not_eh"] == 0.5
    assert s["outcomes"] == {"correct": 0.5, "invalid_format": 0.0, "loop_timeout": 0.25, "premature_stop": 0.25}
    assert s["tokens_per_question"] == 25.0 and s["seeds"] == [0]
    assert summarize([_rec(0, "1", "x", evidence_hit=None)], draws=10)["p_em_given_eh"] is None


def _em(rs) -> float:
    return sum(r.metrics["em"] for r in rs) / len(rs)


def test_bootstrap_ci_reflects_training_seed_variance() -> None:
    # training seed 0 answers everything, seed 1 nothing: the mean is 0.5 and the CI must span most of [0, 1]
    recs = [_rec(0, str(q), "Ada" if s == 0 else "Bob", train_seed=s) for s in (0, 1) for q in range(10)]
    lo, hi = bootstrap_ci(recs, _em, draws=400)
    assert lo <= 0.05 and hi >= 0.95
    same = [_rec(s, str(q), "Ada") for s in (0, 1, 2) for q in range(5)]
    assert bootstrap_ci(same, _em, draws=100) == (1.0, 1.0)
    assert summarize(recs, draws=100)["em_per_seed"] == [1.0, 0.0]


def test_bootstrap_keeps_the_samples_of_a_question_together() -> None:
    # every question right in sample 0 and wrong in sample 1: each question's mean is exactly 0.5,
    # so resampling questions (with their samples) cannot move the mean
    split = [_rec(s, str(q), "Ada" if s == 0 else "Bob") for s in (0, 1) for q in range(12)]
    assert bootstrap_ci(split, _em, draws=200) == (0.5, 0.5)
    # half the questions always right, half always wrong: the two samples are one cluster, so the
    # interval is as wide as for 12 independent questions, not 24
    cluster = [_rec(s, str(q), "Ada" if q % 2 else "Bob") for s in (0, 1) for q in range(12)]
    single = [r for r in cluster if r.seed == 0]
    lo2, hi2 = bootstrap_ci(cluster, _em, draws=1000)
    lo1, hi1 = bootstrap_ci(single, _em, draws=1000)
    assert hi2 - lo2 == pytest.approx(hi1 - lo1, abs=0.05)
    assert hi2 - lo2 > 0.4


def test_paired_difference_by_seed_and_broadcast() -> None:
    from components.evaluation.metrics import paired_difference

    trained = [_rec(0, str(q), "Ada" if (q + s) % 3 else "Bob", train_seed=s) for s in (0, 1, 2) for q in range(9)]
    base = [_rec(0, str(q), "Bob") for q in range(9)]  # one untrained system: pairs with every seed
    d = paired_difference(trained, base, "em", draws=300)
    assert d["n"] == 9 and set(d["per_seed"]) == {"0", "1", "2"}
    assert all(v == pytest.approx(6 / 9) for v in d["per_seed"].values())
    assert d["value"] == pytest.approx(6 / 9) and d["ci"][0] > 0


def test_non_boolean_and_grounded_em() -> None:
    recs = [
        _rec(0, "1", "yes", gold="yes", answer_type="boolean"),
        _rec(0, "2", "12", gold="12.0", answer_type="number", answer_in_results=True),
        _rec(0, "3", "13", gold="12", answer_type="number", answer_in_results=True),
        _rec(0, "4", "Ada", answer_type="entity"),
    ]
    s = summarize(recs, draws=20)
    assert s["em"] == 0.75 and s["em_nonbool"] == pytest.approx(2 / 3) and s["nonbool_questions"] == 3
    assert s["grounded"] == 0.25  # only question 2 is correct and read off its own result
    assert [r.to_dict()["grounded"] for r in recs] == [False, True, False, False]


def test_breakdown_and_round_trip() -> None:
    recs = [_rec(0, "1", "Ada", level="easy"), _rec(0, "2", "Bob", level="hard"), _rec(0, "3", "Ada")]
    b = breakdown(recs, "level", draws=10)
    assert set(b) == {"easy", "hard", "unknown"} and b["hard"]["em"] == 0.0
    back = records_from([r.to_dict() for r in recs])
    assert [r.outcome for r in back] == [r.outcome for r in recs]


def _noisy_data() -> dict:
    """A report's ``data`` part as :func:`components.evaluation.run.build_eval_reports` makes it:
    the funnel of three certified rows of a noisy pool (two template items, one hard fault)."""
    from components.certify.dataset import funnel, funnel_by_source

    def row(source: str, status: str, admitted: bool) -> dict:
        reasons = ["execution_failure"] if status == "hard_failure" else []
        meta = json.dumps({"pool": {"source": source, "kind": source}})
        return {
            "status": status,
            "reasons": reasons,
            "verdict": "skipped",
            "leaked": False,
            "admitted": admitted,
            "quizzer": "template",
            "meta_json": meta,
        }

    rows = [row("template", "strict", True), row("template", "strict", False), row("hard", "hard_failure", False)]
    return {"funnel": funnel(rows), "by_source": funnel_by_source(rows)}


def test_report_files(tmp_path: Path) -> None:
    recs = [
        _rec(s, str(q), "Ada" if q % 2 else "Bob", valid_format=True, judge=bool(q % 2), level="easy")
        for s in (0, 1, 2)
        for q in range(4)
    ]
    report = {
        "systems": {
            "s": {
                "available": True,
                "kind": "python_cypher",
                "method": "m",
                "note": "",
                "summary": summarize(recs, draws=50),
                "by_level": breakdown(recs, "level", draws=10),
                "by_type": breakdown(recs, "qtype", draws=10),
            },
            "dpo": {"available": False, "note": "not trained: no preference pairs", "method": "DPO"},
        },
        "order": ["0", "1", "2", "3"],
        "seeds": [0, 1, 2],
        "decoding": {"temperature": 0.7},
        "judge_model": "judge-x",
        "normalisation": "squad",
        "records": [r.to_dict() for r in recs],
    }
    paths = write_report(report, tmp_path / "r", "test report")
    assert "Training data" not in Path(paths["markdown"]).read_text()  # no data part, no data section
    report["data"] = _noisy_data()
    paths = write_report(report, tmp_path / "r", "test report")
    page = Path(paths["html"]).read_text()
    assert page.count("data:image/png;base64,") == 2 and 'src="http' not in page  # self-contained
    assert "not trained: no preference pairs" in page and "judge-x" in page
    md = Path(paths["markdown"]).read_text()
    assert "| system |" in md and "0.500 [" in md and "P(EM\\|EH)" in md  # a header's "|" cannot split the table
    header = next(line for line in md.splitlines() if line.startswith("| system | method |"))
    assert header.replace("\\|", "").count("|") == len(main_table(report)[0]) + 1
    table = main_table(report)
    assert table[0]["EM"].startswith("0.500") and table[1]["note"].startswith("not trained")
    assert json.loads(Path(paths["json"]).read_text())["seeds"] == [0, 1, 2]
    # the data the systems were trained on: the funnel (table and chart) and the pool by source
    assert "## Training data: the certification funnel" in md and "| hard_failure:execution_failure | 1 |" in md
    assert "admitted" in md.split("```text")[1] and "<h2>Training data by source</h2>" in page
    by_source = next(rows for title, rows in data_tables(report) if title == "Training data by source")
    assert [(r["source"], r["candidates"], r["admitted"]) for r in by_source] == [
        ("template", "2", "1"),
        ("hard", "1", "0"),
    ]
    assert "judge_reject" not in by_source[0] and by_source[1]["hard_failure"] == "1"  # all-zero columns left out
    with pytest.raises(ValueError, match="unknown eval options"):
        from components.evaluation.agents import EvalConfig

        EvalConfig.from_dict({"temperatur": 1})
    with pytest.raises(ValueError, match=r"known: \[.*'temperature'"):  # the message lists what is known
        EvalConfig.from_dict({"temperatur": 1})
    with pytest.raises(ValueError, match="eval section must be a mapping"):
        EvalConfig.from_dict(["samples", 3])


def test_transcripts_to_read_are_wrong_and_right_answers_to_non_boolean_questions() -> None:
    from components.evaluation.metrics import cut_transcript
    from components.evaluation.report import transcripts_markdown

    def rec(q: str, answer: str, gold: str, kind: str, text: str) -> dict:
        r = EvalRecord("s", 0, q, f"question {q}?", gold, answer, answer_type=kind, transcript=text)
        return r.to_dict()

    records = [
        rec("1", "yes", "no", "boolean", "episode of a yes/no question"),
        rec("2", "Bob", "Ada", "entity", "episode two: cypher(...) -> Bob"),
        rec("3", "Ada", "Ada", "entity", "episode three"),
        rec("4", "Cy", "Ada", "entity", "episode four"),
        rec("5", "Di", "Ada", "entity", "episode five"),
        rec("6", "Ada", "Ada", "entity", ""),  # the answer prior writes nothing
    ]
    md = transcripts_markdown({"records": records}, "r")
    assert "## s — test" in md and "episode two" in md and "episode four" in md and "episode three" in md
    assert "yes/no question" not in md and "episode five" not in md  # two wrong, one right, no yes/no
    assert "gold `Ada` · answered `Bob` · invalid_format" in md  # no valid format was recorded
    assert "no system with a model" in transcripts_markdown({"records": records[5:]}, "r")
    long = "x" * 3000 + "y" * 3000
    cut = cut_transcript(long)
    assert len(cut) < 4100 and cut.startswith("x") and cut.endswith("y") and "2000 characters cut" in cut
