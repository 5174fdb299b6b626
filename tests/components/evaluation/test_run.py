"""An evaluation end to end on real parts: the library graph in Ladybug, the real sandbox and
Graph-CoT API, the real embedding retriever, a real tiny model as every system and as the judge;
the GraphRAG context; question files; the `graphdojo eval` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from components.evaluation.agents import EvalConfig, graphrag_context
from components.evaluation.questions import QuestionFileError, load_questions
from components.evaluation.run import SystemSpec, evaluate_systems, judge_dir
from components.graph.load import load_graph
from tests.components.tools.test_graph_cot import library_graph

ROWS = [
    {
        "id": "q1",
        "question": "Who wrote Attention Is All You Need?",
        "answer": "Ann Lee; Bob Stone",
        "answer_type": "set",
        "level": "easy",
        "qtype": "relation_to_find",
    },
    {"id": "q2", "question": "Where was Graph Neural Networks published?", "answer": "KDD", "level": "medium"},
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from components.llm.models import tiny_random_model

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("eval")
    load_graph(library_graph(), root / "db")
    return root / "db", tiny_random_model(root / "tiny", seed=0)


def test_every_system_same_questions_seeds_and_judge(setup) -> None:
    db, model = setup
    systems = [
        SystemSpec("agent", "python_cypher", str(model)),
        SystemSpec("cot", "graph_cot", str(model)),
        SystemSpec("rag", "graphrag", str(model)),
        SystemSpec("dpo", "python_cypher", None, note="not trained"),
    ]
    config = EvalConfig(samples=2, max_turns=2, max_new_tokens=8, threads=1)
    report = evaluate_systems(systems, ROWS, str(db), config, judge_model_dir=str(model))
    assert report["order"] == ["q1", "q2"] and report["seeds"] == [0, 1] and report["judge_model"] == str(model)
    assert report["systems"]["dpo"] == {
        "available": False,
        "note": "not trained",
        "kind": "python_cypher",
        "method": "",
    }
    assert list(report["systems"]) == ["agent", "cot", "rag", "dpo"]  # the given order
    records = report["records"]
    assert len(records) == 3 * 2 * 2 and all(r["judge"] is not None for r in records)
    for name in ("agent", "cot", "rag"):
        s = report["systems"][name]["summary"]
        assert s["records"] == 4 and s["seeds"] == [0, 1] and s["train_seeds"] == [0] and len(s["em_per_seed"]) == 1
        assert sum(s["outcomes"].values()) == pytest.approx(1.0)
        assert set(report["systems"][name]["by_level"]) == {"easy", "medium"}
        assert set(report["systems"][name]["by_answer_type"]) == {"set", "entity"}
        assert set(report["systems"][name]["sections"]) == {"test"}
    assert {r["section"] for r in records} == {"test"} and all("grounded" in r for r in records)
    # every episode is kept to be read: the tool agents' turns with their observations, RAG's reply
    assert all(r["transcript"] for r in records if r["system"] in ("agent", "cot"))
    assert all(len(r["transcript"]) <= 4100 for r in records)
    # the random model never writes a valid step: tool agents end invalid or cut off, never "correct"
    assert all(r["outcome"] != "correct" for r in records)
    with pytest.raises(ValueError, match="no evaluation questions"):
        evaluate_systems(systems[:1], [], str(db), config, judge_model_dir=str(model))


def test_mechanics_only_systems_answer_a_few_questions_once_and_the_judge_can_be_off(setup) -> None:
    db, model = setup
    systems = [
        SystemSpec("full", "python_cypher", str(model)),
        SystemSpec("tiny", "python_cypher", str(model), mechanics=True),
    ]
    config = EvalConfig(samples=2, max_turns=2, max_new_tokens=8, threads=1, judge=False, mechanics_questions=1)
    report = evaluate_systems(systems, ROWS, str(db), config, judge_model_dir=str(model))
    assert report["judge_model"] == "off" and all(r["judge"] is None for r in report["records"])
    full, tiny = report["systems"]["full"]["summary"], report["systems"]["tiny"]["summary"]
    assert (full["questions"], full["records"]) == (2, 4)
    assert (tiny["questions"], tiny["records"], tiny["seeds"]) == (1, 1, [0])
    assert full["judge"] is None
    # a judge that is off is never looked up: no named model is converted into the data folder
    assert judge_dir(config, db.parent) is None and not (db.parent / "models").exists()


def test_record_cache_reuses_a_systems_answers_only_when_nothing_that_decides_them_changed(
    setup, tmp_path: Path
) -> None:
    """A second evaluation with the same systems answers nothing again (the records come back
    equal, the row says cached); another decoding config, another question or a retrained model
    misses the cache; a broken cache file is recomputed."""
    import shutil

    db, model = setup
    config = EvalConfig(samples=1, max_turns=2, max_new_tokens=8, threads=1, judge=False)
    cache = tmp_path / "cache"

    def run(folder: str = str(model), rows: list = ROWS, cfg: EvalConfig = config) -> dict:
        systems = [SystemSpec("agent", "python_cypher", folder)]
        return evaluate_systems(systems, rows, str(db), cfg, judge_model_dir=None, record_cache=cache)

    first = run()
    files = sorted(cache.glob("*.json"))
    assert len(files) == 1 and first["systems"]["agent"]["cached"] is False
    again = run()
    assert again["systems"]["agent"]["cached"] is True and again["records"] == first["records"]
    assert again["systems"]["agent"]["summary"] == first["systems"]["agent"]["summary"]
    retrained = tmp_path / "retrained"
    shutil.copytree(model, retrained)
    changed = [
        run(cfg=EvalConfig(samples=1, max_turns=2, max_new_tokens=9, threads=1, judge=False)),
        run(rows=ROWS[:1]),
        run(folder=str(retrained)),
    ]
    assert all(out["systems"]["agent"]["cached"] is False for out in changed)
    files[0].write_text("{not json")
    broken = run()
    timeless = lambda recs: [{k: v for k, v in r.items() if k != "latency_s"} for r in recs]  # noqa: E731
    assert broken["systems"]["agent"]["cached"] is False and timeless(broken["records"]) == timeless(first["records"])


def test_graphrag_context_walks_two_hops(setup) -> None:
    from components.graph.ladybug import LadybugBackend
    from components.tools.graph_cot import GraphCoT
    from components.tools.retriever import NodeIndex, shared_embedder

    db, _ = setup
    with LadybugBackend(db) as backend:
        api = GraphCoT(
            backend,
            index=NodeIndex.open(backend, shared_embedder(threads=1), progress=False, index_dir=db.parent / "index"),
        )
        one, ids1 = graphrag_context(api, "Attention Is All You Need", hops=1)
        two, ids2 = graphrag_context(api, "Attention Is All You Need", hops=2)
    assert "Ann Lee" in one or "ann" in ids1  # the paper's authors are one hop away
    assert set(ids1) < set(ids2)  # the second hop reaches further (e.g. the authors' other papers)
    assert len(graphrag_context.__defaults__ or ()) >= 0 and len(two) <= 3000


def test_question_files(tmp_path: Path) -> None:
    good = tmp_path / "grbench.jsonl"
    good.write_text(
        '{"qid": "a1", "question": "Who?", "answer": "Ann", "level": "Easy"}\n\n'
        '{"question": "Which?", "answer": ["x", "y"]}\n'
    )
    rows = load_questions(good)
    assert [(r["id"], r["level"], r["answer"], r["answer_type"]) for r in rows] == [
        ("a1", "easy", "Ann", None),
        ("3", None, "x; y", "set"),
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok", "answer": "a"}\nnot json\n{"question": "", "answer": "a"}\n[1]\n')
    with pytest.raises(QuestionFileError, match=r"3 bad line\(s\): line 2: not JSON.*line 3.*line 4"):
        load_questions(bad)
    with pytest.raises(QuestionFileError, match="no such file"):
        load_questions(tmp_path / "missing.jsonl")


def test_eval_command(setup, tmp_path: Path, capsys) -> None:
    from orchestration.cli import main

    db, model = setup
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(json.dumps({"qid": r["id"], "question": r["question"], "answer": r["answer"]}) for r in ROWS)
    )
    rc = main(
        [
            "eval",
            "--checkpoint",
            str(model),
            "--domain",
            "lib",
            "--db",
            str(db),
            "--questions",
            str(qs),
            "--samples",
            "3",
            "--max-turns",
            "1",
            "--max-new-tokens",
            "4",
            "--judge",
            str(model),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and out["questions"] == 2 and Path(out["report"]).is_file()
    assert out["summary"]["system"] == "tiny" and "[" in out["summary"]["EM"]  # with its CI
    transcripts = (tmp_path / "out" / "transcripts.md").read_text()  # episodes to read beside the tables
    assert "## tiny — test" in transcripts and ROWS[0]["question"] in transcripts and "```text" in transcripts
    assert "transcripts.md" in (tmp_path / "out" / "report.md").read_text()
    assert main(["eval", "--checkpoint", str(tmp_path), "--domain", "lib", "--db", str(db)]) == 1
    assert "not a Hugging Face model folder" in capsys.readouterr().err


def test_transfer_matrix(setup, tmp_path: Path) -> None:
    from components.evaluation.transfer import transfer_matrix, write_transfer_report
    from components.graph.sources import demo

    db, model = setup
    other = tmp_path / "bio"
    load_graph(demo.generate("biomedical", seed=1, scale=100), other)
    bio_rows = [{"id": "b1", "question": "Which drug treats disease_1?", "answer": "drug_2"}]
    config = EvalConfig(samples=3, max_turns=1, max_new_tokens=6, threads=1)
    matrix = transfer_matrix(
        {"lib": str(model), "bio": str(model)}, {"lib": (str(db), ROWS), "bio": (str(other), bio_rows)}, config
    )
    assert [(c["train"], c["test"], c["questions"]) for c in matrix["cells"]] == [
        ("lib", "lib", 2),
        ("lib", "bio", 1),
        ("bio", "lib", 2),
        ("bio", "bio", 1),
    ]
    assert all(c["em"] == 0.0 and c["em_ci"] == (0.0, 0.0) for c in matrix["cells"])  # a random model
    paths = write_transfer_report(matrix, tmp_path / "t")
    assert Path(paths["heatmap"]).stat().st_size > 0 and "train \\ test" in Path(paths["markdown"]).read_text()


def test_ood_questions_are_answered_and_reported_apart(setup, tmp_path: Path) -> None:
    from components.evaluation.report import markdown_report

    db, model = setup
    ood = [
        {
            "id": "ood-recommend_similar-0000",
            "question": 'Which authors would you suggest to someone who likes the author "Ann Lee"?',
            "answer": "Bob Stone",
            "answer_type": "set",
            "qtype": "ood:recommend_similar",
            "ood": True,
            "rule": "the 3 other authors sharing the most papers with it",
        }
    ]
    systems = [
        SystemSpec("full", "python_cypher", str(model)),
        SystemSpec("tiny", "python_cypher", str(model), mechanics=True),
    ]
    config = EvalConfig(samples=2, max_turns=2, max_new_tokens=8, threads=1, judge=False, mechanics_questions=1)
    report = evaluate_systems(systems, ROWS, str(db), config, judge_model_dir=None, ood_rows=ood)
    full = report["systems"]["full"]
    assert full["summary"]["questions"] == 2 and full["summary"]["records"] == 4  # the main table is untouched
    assert full["ood"]["summary"]["questions"] == 1 and full["ood"]["summary"]["records"] == 2
    assert "ood:recommend_similar" in full["ood"]["by_kind"] and full["ood"]["summary"]["rouge_l"] is not None
    assert "ood" not in report["systems"]["tiny"]  # mechanics-only systems skip them
    assert report["ood"]["questions"] == 1 and len(report["ood"]["records"]) == 2
    assert all(r["question_id"] != ood[0]["id"] for r in report["records"])
    text = markdown_report(report, "t")
    assert "## Out-of-distribution questions (evaluated only, never trained on)" in text and "| full |" in text


EXTERNAL = [
    {"id": "x1", "question": "How many papers did Ann Lee write?", "answer": "2", "answer_type": "number"},
    {"id": "x2", "question": "Did Bob Stone write Graph Neural Networks?", "answer": "no", "answer_type": "boolean"},
]
TRAIN = [
    {"answer": "yes", "answer_type": "boolean", "family": "one_hop × boolean"},
    {"answer": "no", "answer_type": "boolean", "family": "one_hop × boolean"},
    {"answer": "no", "answer_type": "boolean", "family": "multi_hop × boolean"},
    {"answer": "3", "answer_type": "number", "family": "one_hop × aggregation"},
    {"answer": "KDD", "answer_type": "entity", "family": "one_hop × property"},
]


def test_answer_prior_counts_by_family_then_type_with_a_stated_tie_rule() -> None:
    from components.evaluation.agents import answer_prior

    prior = answer_prior(TRAIN)
    # one_hop × boolean: "yes" and "no" tie once each → the canonical text that sorts first
    assert prior({"answer_type": "boolean", "family": "one_hop × boolean"}) == "no"
    assert prior({"answer_type": "number", "family": "external"}) == "3"  # falls back to the answer type
    assert prior({"answer_type": "set", "family": "external"}) is None  # nothing of that type: no answer


def test_sections_baselines_and_baseline_pairs(setup) -> None:
    db, model = setup
    systems = [
        SystemSpec("answer prior", "answer_prior", "no model"),
        SystemSpec("closed book", "closed_book", str(model)),
        SystemSpec("base few-shot", "python_cypher", str(model), offshelf=True, sections=("test",)),
        SystemSpec("sft-only", "python_cypher", str(model)),
        # GraphDancer's default environment: external questions its four functions cannot express
        # (a count needs NodeDegree on the right node) are still asked and counted
        SystemSpec("graphdancer-rl", "graph_cot", str(model), max_turns=2),
    ]
    config = EvalConfig(samples=2, max_turns=2, max_new_tokens=8, threads=1, judge=False)
    report = evaluate_systems(
        systems, ROWS, str(db), config, judge_model_dir=None, external_rows=EXTERNAL, train_rows=TRAIN
    )
    assert report["order"] == ["q1", "q2"] and report["external_order"] == ["x1", "x2"]
    prior = [r for r in report["records"] if r["system"] == "answer prior"]
    assert {(r["question_id"], r["answer"]) for r in prior} == {("q1", None), ("q2", "KDD"), ("x1", "3"), ("x2", "no")}
    assert all(r["family"] == "external" for r in prior if r["section"] == "external")
    x2 = next(r for r in prior if r["question_id"] == "x2")
    assert x2["outcome"] == "correct" and x2["grounded"] is False  # right by prior, not read off the graph
    few = report["systems"]["base few-shot"]
    assert set(few["sections"]) == {"test"}  # its sections: the test split only
    assert set(report["systems"]["sft-only"]["sections"]) == {"test", "external"}
    dancer = report["systems"]["graphdancer-rl"]["sections"]["external"]["summary"]
    assert dancer["questions"] == 2 and dancer["nonbool_questions"] == 1
    assert sum(r["system"] == "graphdancer-rl" and r["section"] == "external" for r in report["records"]) == 2 * 2
    ext = report["systems"]["answer prior"]["sections"]["external"]["summary"]
    assert ext["questions"] == 2 and ext["em_nonbool"] == 0.0 and ext["nonbool_questions"] == 1
    pairs = {(p["a"], p["b"], p["section"]) for p in report["paired"]}
    assert ("sft-only", "answer prior", "test") in pairs and ("sft-only", "base few-shot", "test") in pairs
    assert ("sft-only", "answer prior", "external") in pairs
    assert ("sft-only", "base few-shot", "external") not in pairs  # the few-shot row skipped that section
    one = next(p for p in report["paired"] if p["a"] == "sft-only" and p["b"] == "answer prior")
    assert set(one) >= {"em", "em_nonbool", "grounded", "f1"}


def test_grounded_answers_come_from_the_episodes_own_results(setup) -> None:
    """A real sandbox episode: an answer equal to a value its own query returned is read off the
    graph; the same number typed without a query that returned it is not."""
    from components.rollout.runner import _obtained, answer_in_results
    from components.tools.episodes import python_cypher_envs

    db, _ = setup
    program = (
        "```python\nr = cypher('MATCH (a:Author {name: $n})-[:WROTE]->(p:Paper) RETURN count(p) AS n', n='Ann Lee')\n"
        "mark_evidence(r)\nprint(r.rows[0][0])\n```\n"
    )
    with python_cypher_envs(str(db), max_rounds=2) as make_env:
        env = make_env()
        try:
            env.reset(question="How many papers did Ann Lee write?")
            env.step(program)
            env.step("<answer>2</answer>")
            values = _obtained(env.trace)
            assert answer_in_results(env.trace.answer, "number", values)
            assert not answer_in_results("3", "number", values)
            assert not answer_in_results("yes", "boolean", values)  # rows are not a yes/no cell
        finally:
            env.close()
        env = make_env()
        try:
            env.reset(question="How many papers did Ann Lee write?")
            env.step("<answer>2</answer>")  # right number, no query at all
            assert not answer_in_results(env.trace.answer, "number", _obtained(env.trace))
        finally:
            env.close()


def test_several_training_seeds_make_one_row_whose_interval_covers_them(setup, tmp_path: Path) -> None:
    """Two tiny models trained from different seeds under one name: one row, records carry their
    seed, the CI resamples seeds then questions, the paired difference reports each seed."""
    from components.llm.models import tiny_random_model

    db, model = setup
    other = tiny_random_model(tmp_path / "tiny1", seed=1)
    systems = [
        SystemSpec("answer prior", "answer_prior", "no model"),
        SystemSpec("sft-only", "python_cypher", str(model), train_seed=0),
        SystemSpec("sft-only", "python_cypher", str(other), train_seed=1),
    ]
    config = EvalConfig(samples=2, max_turns=2, max_new_tokens=8, threads=1, judge=False)
    report = evaluate_systems(systems, ROWS, str(db), config, judge_model_dir=None, train_rows=TRAIN)
    assert list(report["systems"]) == ["answer prior", "sft-only"]
    row = report["systems"]["sft-only"]
    assert row["train_seeds"] == [0, 1] and row["summary"]["train_seeds"] == [0, 1]
    assert row["summary"]["records"] == 2 * 2 * 2 and len(row["summary"]["em_per_seed"]) == 2
    assert {r["train_seed"] for r in report["records"] if r["system"] == "sft-only"} == {0, 1}
    pair = next(p for p in report["paired"] if (p["a"], p["b"]) == ("sft-only", "answer prior"))
    assert set(pair["em"]["per_seed"]) == {"0", "1"}


def test_an_rl_stage_that_kept_its_start_is_reported_as_its_start(setup) -> None:
    """An RL checkpoint whose validation curve kept step 0 is its start's weights: the report row
    says so and reuses the start row's answers (not an RL result in disguise); a stage that kept a
    trained step is evaluated as itself, with the step in its method."""
    from components.evaluation.run import _rl_row
    from components.store.artifact import Artifact

    db, model = setup
    curve = [{"step": 0, "em": 0.5}, {"step": 2, "em": 0.25}]
    kept_start = Artifact("graphcert_grpo", "lib", "f", str(model), summary={"chosen_step": 0, "validation": curve})
    moved = Artifact("graphcert_grpo", "lib", "g", str(model), summary={"chosen_step": 2, "validation": curve})
    row = _rl_row("graphcert-grpo", kept_start, "GraphCert GRPO", "sft-only")
    assert row.same_as == "sft-only" and "did not improve its start" in row.method
    assert _rl_row("graphcert-grpo", moved, "GraphCert GRPO", "sft-only").same_as is None
    assert _rl_row("graphcert-grpo", moved, "GraphCert GRPO", "sft-only").method == "GraphCert GRPO (step 2)"
    systems = [SystemSpec("sft-only", "python_cypher", str(model)), row]
    config = EvalConfig(samples=1, max_turns=2, max_new_tokens=8, threads=1, judge=False)
    report = evaluate_systems(systems, ROWS, str(db), config, judge_model_dir=str(model))
    by = {}
    for r in report["records"]:
        by.setdefault(r["system"], []).append((r["question_id"], r["seed"], r["answer"], r["tokens"]))
    assert by["graphcert-grpo"] == by["sft-only"] and len(by["sft-only"]) == 2
