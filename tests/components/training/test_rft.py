"""Certified rejection-sampling fine-tuning on real parts: trajectories played through the real
Python + Cypher sandbox on a real Ladybug graph, certified by the real certifier; the stage's
rounds on the real tiny model, resumed from its work folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.graph.load import load_graph
from components.rollout.runner import CODE_STOPS, RolloutConfig, RolloutRunner
from components.tools.episodes import python_cypher_envs
from components.training.checkpoint import TrainConfig
from components.training.rft import REJECTIONS, final_program, graphcert_rft, judge_trajectories, pass_at_k
from components.training.teacher import TeacherBackend
from tests.components.tools.test_graph_cot import library_graph

WHO = "Who wrote p2?"
GOLD = "Ann Lee, Bob Stone"
GOOD = (
    "import json\n"
    'r = cypher("MATCH (a:Author)-[:WROTE]->(p:Paper {id: $id}) RETURN a.name AS name", id="p2")\n'
    "mark_evidence(r)\n"
    "print(json.dumps(sorted(row[0] for row in r.rows)))"
)


def code(program: str) -> str:
    return f"```python\n{program}\n```"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("library") / "db"
    load_graph(library_graph(), path)
    return path


def played(tiny_model: Path, db: Path, cases: list[tuple[dict, list[str], int]]) -> list:
    """Each case's fixed steps played through the real environment, as a Solver's trajectory."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    out = []
    with python_cypher_envs(str(db), max_rounds=2) as make_env:
        for row, steps, turns in cases:
            backend = TeacherBackend(tokenizer, steps, CODE_STOPS)
            config = RolloutConfig(max_turns=turns, max_new_tokens=4096, max_total_tokens=1 << 20, stops=CODE_STOPS)
            out += RolloutRunner(backend, make_env, config).run([row])
    return out


def test_only_strict_and_correct_trajectories_are_kept(tiny_model: Path, library_db: Path) -> None:
    who = {"id": "q-who", "question": WHO, "answer": GOLD, "answer_type": "set"}
    cited = {"id": "q-cite", "question": "Does p1 cite p2?", "answer": "no", "answer_type": "boolean"}
    empty = (
        "import json\n"
        'r = cypher("MATCH (a:Paper {id: $a})-[:CITES]->(b:Paper {id: $b}) RETURN b.id", a="p1", b="p2")\n'
        "mark_evidence(r)\nprint(json.dumps(len(r.rows) > 0))"
    )
    hard_coded = GOOD.replace("sorted(row[0] for row in r.rows)", '["Ann Lee", "Bob Stone"]')
    first_only = GOOD.replace("sorted(row[0] for row in r.rows)", "r.rows[0][0]")
    cases = [
        (who, [code(GOOD), "<answer>Ann Lee; Bob Stone</answer>"], 3),  # kept
        (who, [code(GOOD.replace("\n", "\n\n")), "<answer>Bob Stone, Ann Lee</answer>"], 3),  # same program
        (who, [code(GOOD), "<answer>Ann Lee</answer>"], 3),  # wrong answer
        (who, [code('r = cypher("MATCH (x:Nope) RETURN x")'), code(GOOD), f"<answer>{GOLD}</answer>"], 3),
        (who, [code(GOOD)], 1),  # no answer within its turns
        (who, [f"<answer>{GOLD}</answer>"], 3),  # answered without a program
        (cited, [code(empty), "<answer>no</answer>"], 3),  # right, but read off an empty result
        (who, [code(hard_coded), f"<answer>{GOLD}</answer>"], 3),  # the answer is a literal
        (who, [code(first_only), f"<answer>{GOLD}</answer>"], 3),  # prints something else
    ]
    records = played(tiny_model, library_db, cases)
    assert final_program(records[0]).strip() == GOOD and final_program(records[5]) is None
    judged = judge_trajectories(records, str(library_db))
    assert [r.row["id"] for r in judged.kept] == ["q-who"] and judged.kept[0] is records[0]
    assert judged.kept_questions == {"q-who"}
    assert dict(judged.rejected) == {
        "duplicate": 1,
        "wrong_answer": 1,
        "failed_call": 1,
        "unfinished": 1,
        "no_program": 1,
        "empty_result": 1,
        "not_strict": 1,
        "not_printed": 1,
    }
    assert set(judged.rejected) <= set(REJECTIONS)
    # pass@k: one question passes when any sample is right
    assert pass_at_k(records[:3]) == {"questions": 1, "pass_at_k": 1.0, "em": pytest.approx(2 / 3)}


def test_rounds_train_on_teacher_plus_kept_and_resume(tiny_model: Path, library_db: Path, tmp_path: Path) -> None:
    """The stage on the real tiny model: every round samples, certifies, fine-tunes and records
    its counts and pass@k; a rebuild with more rounds continues after the finished ones."""
    row = {
        "id": "q-who",
        "question": WHO,
        "answer": GOLD,
        "answer_type": "set",
        "final_program": GOOD,
        "evidence_json": "[]",
    }
    rows = [{**row, "id": f"q{i}"} for i in range(4)]
    work = tmp_path / "work"

    def run(rounds: int, out: str, log: list[str]):
        config = TrainConfig(preset="cpu-tiny", threads=1, budgets={"rft_rounds": rounds})
        return graphcert_rft(
            tiny_model,
            rows,
            rows[:2],
            str(library_db),
            config,
            tmp_path / out,
            work_dir=work,
            data_fingerprint="fp",
            domain="library",
            validation=rows[:2],
            log=log.append,
        )

    first_log: list[str] = []
    first = run(1, "one", first_log)
    rounds = first.selection["rounds"]
    assert len(rounds) == 1 and rounds[0]["sampled"] == 4 * 2  # rft_questions × rft_samples
    assert rounds[0]["kept"] + sum(rounds[0]["rejected"].values()) == rounds[0]["sampled"]
    assert first.selection["teacher"] == 2 and first.examples == 2 + first.selection["kept_total"]
    assert [v["step"] for v in first.validation] == [0, 1] and all(0 <= v["reward"] <= 1 for v in first.validation)
    assert (tmp_path / "one" / "config.json").is_file() and (tmp_path / "one" / "README.md").is_file()
    log: list[str] = []
    second = run(2, "two", log)
    assert log[0] == "[rft] round 1: finished before, resumed" and log[1].startswith("[rft] round 2/2: kept ")
    assert second.selection["rounds"][0] == rounds[0] and len(second.selection["rounds"]) == 2
    state = json.loads((work / "round-2.json").read_text())
    assert state["round"]["round"] == 2 and state["round"]["losses"]
    # the first round's weights are dropped once the second round has its own
    assert not list((work / "round-1").glob("*.safetensors")) and list((work / "round-2").glob("*.safetensors"))
