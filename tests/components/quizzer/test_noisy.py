"""A noisy pool on the real academic graph: the shares asked for are made, every fault variant
certifies as its kind says (hard failures with their reason, partial items partial, changed
questions strict), untouched candidates stay strict, the labels feed the funnel by source, the
same seed makes the same pool; paraphrases that change the meaning are kept, others dropped;
bad configs are clear errors."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from components.certify.dataset import (
    CertifyConfig,
    funnel,
    funnel_by_source,
    run_certification,
    source_chart,
    source_totals,
)
from components.certify.faults import FAULTS
from components.graph.load import load_graph
from components.graph.sources import demo
from components.quizzer.noisy import MEANING_REASONS, NoiseConfig, held_out, pool_label
from components.quizzer.run import QuizConfig, run_quiz
from tests.doubles import ScriptedBackend

NOISE = {"hard": 0.2, "partial": 0.2, "semantic": 0.2, "seed": 3}


@pytest.fixture(scope="module")
def academic_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("noisy") / "db"
    load_graph(demo.generate("academic", seed=0, scale=300), db)
    return db


@pytest.fixture(scope="module")
def noisy_run(academic_db: Path):
    run = run_quiz(str(academic_db), QuizConfig(template_n=60, llm_n=0, noise=NOISE))
    return run, run_certification(run.candidates, str(academic_db), CertifyConfig(fault_sample=0))


def test_the_pool_has_the_shares_asked_for_and_says_so(noisy_run) -> None:
    run, _ = noisy_run
    n = run.noise["template_candidates"]
    assert n == sum(c.ok for c in run.candidates) > 40
    made = {source: sum(kinds.values()) for source, kinds in run.noise["made"].items()}
    assert made["hard"] == made["semantic"] == round(0.2 * n)
    assert 0 < made["partial"] <= round(0.2 * n)
    assert set(run.noise["made"]["hard"]) >= {"swapped_answer", "reversed_direction", "snapshot_changed"}
    by_source = Counter(pool_label(c)[0] for c in run.candidates)
    assert run.noise["by_source"] == {s: k for s, k in by_source.items()}
    assert by_source["template"] == len(run.candidates) - sum(made.values())
    assert "noise" in run.wall_s


def test_every_variant_certifies_as_its_kind_says(noisy_run) -> None:
    run, certified = noisy_run
    for cand, row in zip(run.candidates, certified.rows, strict=True):
        source, kind = pool_label(cand)
        if source in ("hard", "partial"):
            assert FAULTS[kind].caught(row["status"], row["reasons"]), (kind, row["status"], row["reasons"])
        elif source == "semantic":  # only the question changed: every program check passes
            assert row["status"] == "strict" and cand.meta["noise_detail"]
        else:
            assert (source, row["status"]) == ("template", "strict")


def test_the_funnel_by_source_counts_what_certification_removed(noisy_run) -> None:
    run, certified = noisy_run
    rows = funnel_by_source(certified.rows)
    assert sum(r["candidates"] for r in rows) == len(run.candidates)
    totals = source_totals(rows)
    assert list(totals) == ["template", "hard", "partial", "semantic"]
    assert totals["hard"]["admitted"] == 0 == totals["hard"]["strict"]
    assert totals["partial"]["partial"] == totals["partial"]["candidates"] and totals["partial"]["admitted"] == 0
    assert totals["semantic"]["admitted"] == totals["semantic"]["candidates"]  # the judge is off: they get in
    assert all(r["judge_skipped"] == r["strict"] + r["partial"] for r in rows)
    chart = source_chart(rows)
    assert chart.count("\n") == len(totals) + 1 and "semantic" in chart
    assert f"{totals['hard']['admitted']} of {totals['hard']['candidates']} admitted" in chart


def test_an_admitted_injected_item_trains_but_is_never_held_out(noisy_run, academic_db: Path) -> None:
    from components.curriculum.build import build_curriculum
    from components.graph.ladybug import LadybugBackend

    run, certified = noisy_run
    backend = LadybugBackend(academic_db)
    try:
        items = build_curriculum(certified.rows, backend.schema(), backend, fractions=(0.5, 0.2, 0.3), seed=0)
    finally:
        backend.close()
    source = {c.id: pool_label(c)[0] for c in run.candidates}
    splits = Counter((source[i["id"]], i["split"]) for i in items)
    assert splits[("semantic", "train")] == run.noise["by_source"]["semantic"]  # admitted: the judge is off
    assert splits[("template", "test")] > 0 and splits[("template", "validation")] > 0
    assert not [k for k in splits if k[0] != "template" and k[1] != "train"]


def test_a_held_out_set_is_clean_evaluation_only_and_shares_no_node_with_training(academic_db: Path) -> None:
    from components.curriculum.build import build_curriculum

    run = run_quiz(str(academic_db), QuizConfig(template_n=40, llm_n=0, noise=NOISE, held_out_n=30))
    held = [c for c in run.candidates if held_out(c)]
    pool = [c for c in run.candidates if not held_out(c)]
    assert 20 <= len(held) <= 30 and {c.quizzer for c in held} == {"template"} and "held_out" in run.wall_s
    assert not {c.question for c in held} & {c.question for c in pool}  # never a training question word for word
    assert not {c.id for c in held} & {c.id for c in pool}
    assert run.noise["by_source"].get("held_out") is None  # the pool's composition is the pool's
    certified = run_certification(run.candidates, str(academic_db), CertifyConfig(fault_sample=0))
    rows = [r for r in certified.rows if held_out(r)]
    assert all(r["status"] == "strict" and not r["admitted"] for r in rows)
    stages = dict(funnel(certified.rows))
    assert stages["candidates"] == len(pool) and stages["held_out:strict"] == len(rows)
    assert stages["admitted"] == sum(r["admitted"] for r in certified.rows)
    from components.graph.ladybug import LadybugBackend

    report: dict = {}
    backend = LadybugBackend(academic_db)
    try:
        items = build_curriculum(certified.rows, backend.schema(), backend, fractions=(0.5, 0.1, 0.4), report=report)
    finally:
        backend.close()
    evaluation = [i for i in items if i["split"] != "train"]
    assert {i["id"] for i in evaluation} == {r["id"] for r in rows}  # the held-out set and nothing else
    assert {i["split"] for i in evaluation} == {"validation", "test"}
    keys = {k for i in evaluation for k in i["entities"]}
    assert not [i for i in items if i["split"] == "train" and keys & set(i["entities"])]
    admitted = sum(r["admitted"] for r in certified.rows)
    assert report["held_out_questions"] == len(rows)
    assert report["left_out_sharing_held_out"] == admitted + len(rows) - len(items) > 0


def test_the_same_seed_makes_the_same_pool(noisy_run, academic_db: Path) -> None:
    run, _ = noisy_run
    again = run_quiz(str(academic_db), QuizConfig(template_n=60, llm_n=0, noise=NOISE))
    assert [(c.id, c.question, pool_label(c)) for c in again.candidates] == [
        (c.id, c.question, pool_label(c)) for c in run.candidates
    ]
    other = run_quiz(str(academic_db), QuizConfig(template_n=60, llm_n=0, noise={**NOISE, "seed": 4}))
    assert [pool_label(c) for c in other.candidates] != [pool_label(c) for c in run.candidates]


def test_a_changed_meaning_paraphrase_is_kept_and_a_non_question_dropped(academic_db: Path, monkeypatch) -> None:
    """Scripted rewrites (the double stands in for the model's text only): every other one is no
    question at all (dropped, the candidate stays a template one), the rest drop the quoted names
    (a changed meaning: kept as the question)."""
    import components.llm as llm_module

    asked: list[str] = []

    def script(conversation, turn):
        asked.append(conversation[0]["content"].rsplit("Question: ", 1)[1])
        return "I cannot help with that." if len(asked) % 2 else "Is that one of them, do you think?"

    monkeypatch.setattr(llm_module, "make_backend", lambda *a, **k: ScriptedBackend(script))
    run = run_quiz(str(academic_db), QuizConfig(template_n=20, llm_n=0, model="scripted", noise={"paraphrase": 0.5}))
    assert len(asked) == round(0.5 * run.noise["template_candidates"]) > 2
    kept = [c for c in run.candidates if pool_label(c)[0] == "paraphrase"]
    assert len(kept) == len(asked) // 2 == sum(run.noise["made"]["paraphrase"].values())
    assert all(pool_label(c)[1] == "rejected:entities" and "entities" in MEANING_REASONS for c in kept)
    assert all(c.question == "Is that one of them, do you think?" != c.meta["template_question"] for c in kept)
    untouched = [c for c in run.candidates if c.question in asked and pool_label(c)[0] == "template"]
    assert len(untouched) == len(asked) - len(kept)  # the non-questions changed nothing


@pytest.mark.parametrize(
    ("noise", "message"),
    [
        ({"hard": -0.1}, "between 0 and 1"),
        ({"hard": 0.6, "semantic": 0.5}, "at most 1"),
        ({"hard": True}, "between 0 and 1"),
        ({"noise": 0.2}, "unknown quiz.noise options"),
    ],
)
def test_a_bad_noise_config_is_a_clear_error(noise, message) -> None:
    with pytest.raises(ValueError, match=message):
        QuizConfig.from_dict({"noise": noise})


def test_a_paraphrase_share_without_a_model_is_a_clear_error() -> None:
    from components.quizzer.noisy import make_noisy

    assert not NoiseConfig().active and NoiseConfig(semantic=0.1).active
    assert QuizConfig(llm_n=0, noise={"paraphrase": 0.1}).needs_model and not QuizConfig(llm_n=0).needs_model
    with pytest.raises(ValueError, match="needs the quizzer's model"):
        make_noisy([], NoiseConfig(paraphrase=0.5), schema=None, query_path=None, fingerprint="f", llm=None)


@pytest.mark.parametrize("value", [-1, 2.5, "10", True])
def test_a_bad_held_out_size_is_a_clear_error(value) -> None:
    with pytest.raises(ValueError, match="quiz.held_out_n must be a whole number"):
        QuizConfig.from_dict({"held_out_n": value})


def test_a_domain_without_a_held_out_set_keeps_its_fingerprint() -> None:
    assert "held_out_n" not in QuizConfig().to_json()
    assert QuizConfig.from_dict({"held_out_n": 50}).to_json()["held_out_n"] == 50
