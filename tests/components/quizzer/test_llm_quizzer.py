"""The LLM Quizzer: failure recording and repair driven by a scripted backend (a test double for
model *output*), batching, and the loop on a real tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.llm.base import GenerationBackend
from components.quizzer.candidate import FAILURE_REASONS, QACandidate
from components.quizzer.llm_quizzer import LLMQuizzer, LLMQuizzerConfig, parse_turn
from components.tools.sandbox import SandboxLimits
from tests.doubles import Script, ScriptedBackend

LIMITS = SandboxLimits(cell_timeout_s=2.0)


def final_turn(code: str, question: str = "How many authors are there?", answer: str = "{n}") -> str:
    return f"```python\n{code}\n```\n<question>{question}</question>\n<answer>{answer}</answer>"


COUNT = 'r = cypher("MATCH (a:Author) RETURN count(a) AS c")\nanswer = r.rows[0][0]\nmark_evidence(r)\nprint(answer)'


@pytest.fixture()
def academic(demo_paths):
    qp, schema = demo_paths["academic"]
    n_authors = qp.run("MATCH (a:Author) RETURN count(a) AS c").rows[0][0]
    return qp, schema, n_authors


def run(academic, script: Script, n: int = 1, **config) -> tuple[list[QACandidate], ScriptedBackend]:
    qp, schema, _ = academic
    backend = ScriptedBackend(script, prompt_tokens=100, completion_tokens=lambda text: max(1, len(text) // 4))
    assert isinstance(backend, GenerationBackend)
    cfg = LLMQuizzerConfig(**{"max_turns": 3, "answer_types": ("number",), **config})
    cands = LLMQuizzer(qp, schema, backend, seed=0, limits=LIMITS, config=cfg).generate(n)
    for c in cands:
        json.dumps(c.to_record())
        assert QACandidate.from_record(c.to_record()) == c
        assert c.failure_reason is None or c.failure_reason in FAILURE_REASONS
    return cands, backend


def test_explore_then_final_makes_a_complete_candidate(academic) -> None:
    n = academic[2]
    script = lambda conv, t: [
        "```python\nr = cypher('MATCH (a:Author) RETURN a.name AS n LIMIT 3')\nprint(r.rows)\n```",
        final_turn(COUNT, answer=str(n)),
    ][t]
    (c,), _ = run(academic, script)
    assert c.ok, (c.failure_reason, c.failure_detail)
    assert c.answer_value == n and c.answer == str(n) and not c.repaired
    assert [e["rows"] for e in c.evidence] == [[[n]]] and c.evidence[0]["query"].startswith("MATCH (a:Author)")
    assert c.final_program.strip() == COUNT and c.axes["answer_type"] == "number"
    assert "3 rows" in c.trace[0]["observation"] and c.trace[1]["final_run"]["ok"]
    assert c.prompt_tokens == 200 and c.completion_tokens > 0 and c.meta["answer_in_evidence"]
    assert c.start_node["label"] and c.neighbourhood["hops"]


def test_a_closing_turn_makes_the_last_marked_program_the_final_program(academic) -> None:
    """``closing: hint``: a small model explores correctly, then writes only the tags: the program
    it just ran (which printed an answer and marked its evidence) becomes the final program,
    re-checked in a fresh sandbox."""
    from components.quizzer.prompts import CLOSING_HINT

    n = academic[2]
    tags = f"<question>How many authors are there?</question><answer>{n}</answer>"
    hint = {"repair": False, "closing": "hint"}
    (c,), _ = run(academic, lambda conv, t: [f"```python\n{COUNT}\n```", tags][t], **hint)
    assert c.ok and c.answer_value == n and c.final_program.strip() == COUNT, (c.failure_reason, c.failure_detail)
    assert CLOSING_HINT in c.trace[0]["observation"] and c.trace[1]["kind"] == "closing"
    assert c.trace[1]["program_from_turn"] == 1 and c.trace[1]["final_run"]["ok"]
    # a program that marked nothing is not one to close on: the tags alone have no final code …
    unmarked = 'r = cypher("MATCH (a:Author) RETURN count(a) AS c")\nprint(r.rows[0][0])'
    (c2,), _ = run(academic, lambda conv, t: [f"```python\n{unmarked}\n```", tags][t], **hint)
    assert c2.failure_reason == "no_final_code" and CLOSING_HINT not in c2.trace[0]["observation"]
    # … and a closing program that leaned on an earlier turn's variable fails in the fresh sandbox
    script = [
        "```python\nq = 'MATCH (a:Author) RETURN count(a) AS c'\nprint(1)\n```",
        "```python\nr = cypher(q)\nmark_evidence(r)\nprint(r.rows[0][0])\n```",
        tags,
    ]
    (c3,), _ = run(academic, lambda conv, t: script[t], **hint)
    assert c3.failure_reason == "code_error" and "NameError" in c3.failure_detail
    # a closing turn with the question but no answer still misses its tags
    (c4,), _ = run(academic, lambda conv, t: [f"```python\n{COUNT}\n```", "<question>How many?</question>"][t], **hint)
    assert c4.failure_reason == "missing_tags"


def test_a_forced_closing_turn_starts_with_the_question_tag(academic) -> None:
    """``closing: force`` (the default): after a program that printed an answer of the requested
    type and marked its evidence, the model's next turn is started with ``<question>`` — in a call
    of its own — so a model that would explore again writes the question and answer instead; the
    program is the final program. Programs printing no answer (``null``) or the wrong type, or
    marking nothing, are not closed on."""
    from components.quizzer.prompts import CLOSING_FORCED

    n = academic[2]
    explore = f"```python\n{COUNT}\n```"
    tags = f"<question>How many authors are there?</question><answer>{n}</answer>"
    # turn 1 is continued from "<question>" and ends at "</question>": the model writes the
    # question; the answer is what the program printed (an answer the model states is not read)
    wrong = "<question>How many authors are there?</question><answer>-1</answer>"
    (c,), backend = run(academic, lambda conv, t: [explore, wrong, explore][t], repair=False)
    assert c.ok and c.answer_value == n and c.final_program.strip() == COUNT, (c.failure_reason, c.failure_detail)
    assert c.question == "How many authors are there?" and c.answer == str(n)
    assert CLOSING_FORCED in c.trace[0]["observation"] and c.trace[1]["kind"] == "closing"
    assert c.trace[1]["prefix"] == "<question>" and c.trace[1]["answer_from"] == "program"
    closing_call = backend.calls[1][0]
    assert closing_call[-1] == {"role": "assistant", "content": "<question>"}
    # an empty question, or one cut at the token budget, is no question
    for reply in ("<question></question>", ("<question>How many authors and how many", "length")):
        (ce,), _ = run(academic, lambda conv, t, r=reply: [explore, r][t], repair=False)
        assert ce.failure_reason == "missing_tags" and ce.trace[1]["kind"] == "closing"
    # an exploration on the last turn is still owed its closing turn (max_turns 1 + 1)
    (c1,), backend1 = run(academic, lambda conv, t: [explore, tags][t], max_turns=1, repair=False)
    assert c1.ok and backend1.batches == [1, 1] and len(c1.trace) == 2
    # programs that print no answer (null), an answer of another type, or mark nothing: no closing
    for program in (
        'r = cypher("MATCH (a:Author) RETURN count(a) AS c")\nmark_evidence(r)\nprint("null")',
        'r = cypher("MATCH (a:Author) RETURN a.name AS n LIMIT 1")\nmark_evidence(r)\nprint(r.rows[0][0])',
        'r = cypher("MATCH (a:Author) RETURN count(a) AS c")\nprint(r.rows[0][0])',
    ):
        script = [f"```python\n{program}\n```", "```python\nprint(1)\n```", tags]
        (cx,), _ = run(academic, lambda conv, t, script=script: script[t], repair=False)
        assert CLOSING_FORCED not in cx.trace[0]["observation"] and "prefix" not in cx.trace[1]
    # a mixed batch: the episode that must close is one call, the one exploring on another
    first = iter([explore, "```python\nprint(1)\n```"])
    (c2, c3), backend2 = run(academic, lambda conv, t: next(first) if t == 0 else tags, n=2, repair=False)
    assert sorted(backend2.batches[1:]) == [1, 1] and backend2.batches[0] == 2
    assert sum(call[0][-1]["content"] == "<question>" for call in backend2.calls[1:]) == 1
    assert c2.ok and c2.trace[1]["kind"] == "closing" and c3.failure_reason == "no_final_code"


BAD_FINALS = {
    "code_error": final_turn("x = 1 / 0"),
    "timeout": final_turn("while True:\n    pass"),
    "unsafe_query": final_turn(
        'r = cypher("MATCH (a:Author) DETACH DELETE a")\nmark_evidence(r)\nprint(0)', answer="0"
    ),
    "schema_error": final_turn(
        'r = cypher("MATCH (a:Writer) RETURN count(a) AS c")\nmark_evidence(r)\nprint(r.rows[0][0])'
    ),
    "no_evidence": final_turn('r = cypher("MATCH (a:Author) RETURN count(a) AS c")\nprint(r.rows[0][0])'),
    "answer_mismatch": final_turn(COUNT, answer="-5"),
    "unparseable_answer": final_turn(COUNT, answer="lots of them"),
    "no_final_code": "<question>How many authors?</question><answer>3</answer>",
    "missing_tags": "```python\nprint(1)\n```\n<question>How many authors?</question>",
    "empty_output": "",
    "forged_evidence": final_turn('mark_evidence({"id": "x:q1", "rows": []})\nprint(1)', answer="1"),
}


@pytest.mark.parametrize("reason", sorted(BAD_FINALS))
def test_bad_final_turns_are_failed_candidates_with_a_reason(academic, reason: str) -> None:
    n = academic[2]
    text = BAD_FINALS[reason].replace("{n}", str(n))
    (c,), backend = run(academic, lambda conv, t: text, max_turns=1, repair=False)
    assert c.failure_reason == reason, (c.failure_reason, c.failure_detail)
    assert c.failure_detail and not c.repaired and backend.batches == [1]


def test_wrong_direction_is_a_schema_error(academic) -> None:
    code = (
        'r = cypher("MATCH (p:Paper)-[:WROTE]->(a:Author) RETURN count(a) AS c")\nmark_evidence(r)\nprint(r.rows[0][0])'
    )
    (c,), _ = run(academic, lambda conv, t: final_turn(code, answer="0"), max_turns=1, repair=False)
    assert c.failure_reason == "schema_error" and "(:Paper)-[:WROTE]->(:Author)" in c.failure_detail


@pytest.mark.parametrize(
    ("texts", "reason"),
    [
        (["garbage \x00\x01 ~~~", "more garbage", "<<<>>>"], "no_code"),
        (["", "", ""], "empty_output"),
        (["```python\nprint(1)\n```"] * 3, "loop_limit"),
        ([("word " * 500, "length")] * 3, "no_code"),  # endless output, cut at max_new_tokens
    ],
)
def test_garbage_empty_tagless_and_endless_output(academic, texts, reason: str) -> None:
    (c,), _ = run(academic, lambda conv, t: texts[t], repair=False)
    assert c.failure_reason == reason and len(c.trace) == 3


def test_one_bounded_repair_pass(academic) -> None:
    n = academic[2]
    seen: list[str] = []

    def script(conv, t):
        if t == 0:
            return final_turn("x = undefined_name")
        seen.append([m for m in conv if m["role"] == "user"][-1]["content"])
        return final_turn(COUNT, answer=str(n))

    (c,), backend = run(academic, script)
    assert c.ok and c.repaired and c.meta["first_failure"] == "code_error"
    assert "code_error" in seen[0] and "NameError" in seen[0] and backend.batches == [1, 1]
    assert [r.get("kind") for r in c.trace] == ["final", "repair_request", "final"]
    # the repair is bounded: a failed repair stays failed, no second repair
    (c2,), backend2 = run(academic, lambda conv, t: final_turn("x = undefined_name"))
    assert c2.failure_reason == "code_error" and not c2.repaired and backend2.batches == [1, 1]


def test_a_repair_program_is_closed_on(academic) -> None:
    """With forced closing, a repair turn that is a program (no tags) which prints an answer and
    marks its evidence is run and closed on like an exploration; one that does not, or any program
    with ``closing: hint``, fails the repair as before."""
    n = academic[2]
    tags = f"<question>How many authors are there?</question><answer>{n}</answer>"
    script = [final_turn("x = undefined_name"), f"```python\n{COUNT}\n```", tags]
    (c,), backend = run(academic, lambda conv, t: script[t])
    assert c.ok and c.repaired and c.final_program.strip() == COUNT, (c.failure_reason, c.failure_detail)
    assert backend.batches == [1, 1, 1] and backend.calls[2][0][-1]["content"] == "<question>"
    assert [r.get("kind") for r in c.trace] == ["final", "repair_request", "explore", "closing"]
    (c2,), _ = run(academic, lambda conv, t: [final_turn("x = undefined_name"), "```python\nprint(1)\n```"][t])
    assert c2.failure_reason == "missing_tags" and not c2.repaired and "printed no answer" in c2.failure_detail
    (c3,), b3 = run(academic, lambda conv, t: script[t], closing="hint")
    assert c3.failure_reason == "missing_tags" and b3.batches == [1, 1]


def test_turn_k_of_all_episodes_is_one_batched_call(academic) -> None:
    n = academic[2]

    def script(conv, t):  # one exploration turn, then the final turn
        return final_turn(COUNT, answer=str(n)) if t >= 1 else "```python\nprint(2)\n```"

    cands, backend = run(academic, script, n=5)
    assert backend.batches == [5, 5] and all(c.ok for c in cands)
    assert [c.index for c in cands] == list(range(5)) and len({c.id for c in cands}) == 5


def test_a_backend_exception_is_recorded(academic) -> None:
    def boom(conv, t):
        raise RuntimeError("CUDA out of memory")

    (c,), _ = run(academic, boom)
    assert c.failure_reason == "backend_error" and "out of memory" in c.failure_detail


def test_parse_turn_protocol() -> None:
    assert parse_turn("```python\na\n```\n```python\nb\n```").reason == "multiple_code_blocks"
    t = parse_turn("```python\nx\n```<question> Q </question><answer> 4 </answer>")
    assert (t.kind, t.code, t.question, t.answer) == ("final", "x\n", "Q", "4")
    assert parse_turn("   ").kind == "empty"
    # a forgotten </question> ends the question where the answer tag opens; no answer tag stays missing
    t = parse_turn("```python\nx\n```<question>Who wrote it?\n<answer>Ann</answer>")
    assert (t.question, t.answer, t.reason) == ("Who wrote it?", "Ann", None)
    assert parse_turn("```python\nx\n```<question>Who wrote it?").reason == "missing_tags"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from components.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_the_loop_on_a_real_tiny_model(demo_paths, tiny_model: Path) -> None:
    from components.llm.transformers_backend import TransformersBackend

    qp, schema = demo_paths["ecommerce"]
    cfg = LLMQuizzerConfig(max_turns=1, max_new_tokens=12)
    # two runs as two processes make them: a fresh backend each (a warm prefix cache computes the
    # same logits in other matmul shapes, and float rounding can flip a draw of a random model)
    runs, backends = [], [TransformersBackend(tiny_model) for _ in range(2)]
    for backend in backends:
        runs.append(LLMQuizzer(qp, schema, backend, seed=3, limits=LIMITS, config=cfg).generate(3))
    cands = runs[0]
    assert len(cands) == 3
    for c in cands:
        assert c.failure_reason in FAILURE_REASONS  # random weights: failed, with a reason
        assert c.completion_tokens > 0 and c.prompt_tokens > 0 and c.latency_s > 0
        assert [r["model_text"] for r in c.trace if "model_text" in r]
        assert c.model == backend.model_name
        json.dumps(c.to_record())
    # seeded sampling: the same seed gives the same transcripts
    assert [[r.get("model_text") for r in c.trace] for c in runs[0]] == [
        [r.get("model_text") for r in c.trace] for c in runs[1]
    ]
    for backend in backends:
        backend.close()


@pytest.mark.slow
def test_the_loop_on_real_smollm2_records_and_is_deterministic(tmp_path) -> None:
    """The real SmolLM2-135M through the whole multi-turn loop (sandbox, final check, repair):
    whatever it writes ends as a recorded candidate, identically for the same seed."""
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.llm import make_backend
    from components.quizzer import LLMQuizzer, LLMQuizzerConfig
    from components.quizzer.candidate import FAILURE_REASONS

    load_graph(demo.generate("academic", seed=0, scale=120), tmp_path / "db")
    runs = []
    with LadybugBackend(tmp_path / "db") as graph:
        schema = graph.schema()
        for _ in range(2):  # a fresh backend per run, as two processes (see the tiny-model test)
            llm = make_backend("transformers", threads=1)
            quizzer = LLMQuizzer(
                ReadOnlyQueryPath(graph, schema=schema),
                schema,
                llm,
                seed=4,
                config=LLMQuizzerConfig(max_turns=2, max_new_tokens=40),
            )
            runs.append(quizzer.generate(1))
            llm.close()
    (a,), (b,) = runs
    assert a.model and "SmolLM2" in a.model
    assert a.completion_tokens > 0 and len([t for t in a.trace if "turn" in t]) >= 1
    assert a.ok or a.failure_reason in FAILURE_REASONS
    assert [t.get("model_text") for t in a.trace] == [t.get("model_text") for t in b.trace]
    assert (a.failure_reason, a.question, a.answer) == (b.failure_reason, b.question, b.answer)


def test_worked_examples_come_from_this_graph_and_a_copy_of_one_is_not_counted(academic) -> None:
    """The system prompt shows template-quizzer final turns made on *this* graph (distinct answer
    types first); a final turn that repeats one of them — same query structure, same entities —
    fails as ``copied_example``; the same structure about another node counts."""
    qp, schema, _ = academic
    quizzer = LLMQuizzer(qp, schema, ScriptedBackend([]), seed=0, limits=LIMITS, config=LLMQuizzerConfig(few_shot=3))
    examples = quizzer.examples
    assert len(examples) == 3 and len({e.answer_type for e in examples}) == 3 and all(e.ok for e in examples)
    for ex in examples:
        assert ex.question in quizzer._system and ex.final_program.strip() in quizzer._system
        label = ex.start_node["label"]
        found = qp.run(f"MATCH (n:{label} {{id: $id}}) RETURN count(n) AS c", {"id": ex.start_node["id"]})
        assert list(found.rows) == [(1,)]  # a node of this graph
    ex = examples[0]
    copy = final_turn(ex.final_program.strip(), question=ex.question, answer=ex.answer)
    (c,), _ = run(academic, lambda conv, t: copy, answer_types=(ex.answer_type,), few_shot=3, repair=False)
    assert c.failure_reason == "copied_example" and ex.id in c.failure_detail
    n = academic[2]  # a count over all authors is no example's shape (they start from a node) …
    (own,), _ = run(academic, lambda conv, t: final_turn(COUNT, answer=str(n)), few_shot=3)
    assert own.ok, (own.failure_reason, own.failure_detail)  # … so it counts


def test_a_wrong_direction_is_explained_in_the_observation(academic) -> None:
    wrong = "```python\nr = cypher('MATCH (p:Paper)-[:WROTE]->(a:Author) RETURN count(*) AS c')\nprint(r.rows)\n```"
    (c,), _ = run(academic, lambda conv, t: [wrong, final_turn(COUNT, answer=str(academic[2]))][t])
    obs = c.trace[0]["observation"]
    assert "Note: (:Paper)-[:WROTE]->(:Author) is not in the schema" in obs
    assert "the schema has (:Author)-[:WROTE]->(:Paper)" in obs


def test_closing_mode_is_checked_and_fingerprinted() -> None:
    from components.quizzer.run import QuizConfig, _params

    with pytest.raises(ValueError, match="closing must be one of"):
        LLMQuizzerConfig(closing="sometimes")
    with pytest.raises(ValueError, match="closing must be one of"):
        QuizConfig.from_dict({"llm_n": 1, "llm": {"closing": "never"}})
    forced, hinted = (_params(QuizConfig(llm_n=1, llm=llm)) for llm in ({}, {"closing": "hint"}))
    assert forced["llm_resolved"]["closing"] == "force" and hinted["llm_resolved"]["closing"] == "hint"
    assert "llm_resolved" not in _params(QuizConfig(llm_n=0))  # no LLM Quizzer: its settings are not the run's


def test_the_question_must_fit_its_checked_program(academic) -> None:
    """The program checks never read the question; three deterministic checks on the LLM
    Quizzer's question do: its quoted names are reached by the evidence (by value, or as the name
    of a node whose key the evidence uses), its wording asks for the answer type it has, and it
    does not name its own answer. Each failure is a stable reason; a fitting question passes."""
    qp = academic[0]
    aid, name, papers = qp.run(
        "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN a.id, a.name, count(p) AS n ORDER BY a.id LIMIT 1"
    ).rows[0]
    by_id = (
        f'r = cypher("MATCH (a:Author {{id: $id}})-[:WROTE]->(p:Paper) RETURN count(p) AS n", id="{aid}")\n'
        "answer = r.rows[0][0]\nmark_evidence(r)\nprint(answer)"
    )
    fits = f'How many papers did the author "{name}" write?'
    (ok,), _ = run(academic, lambda conv, t: final_turn(by_id, fits, str(papers)), max_turns=1, repair=False)
    assert ok.ok, (ok.failure_reason, ok.failure_detail)  # the name is reached through the author's id
    cases = {
        "ungrounded_question": (by_id, 'How many papers did the author "Nobody Atall" write?', str(papers), "number"),
        "question_form": (by_id, f'Which paper did the author "{name}" write first?', str(papers), "number"),
        "answer_in_question": (
            f'r = cypher("MATCH (a:Author {{id: $id}}) RETURN a.name AS n", id="{aid}")\n'
            "answer = r.rows[0][0]\nmark_evidence(r)\nprint(answer)",
            f'Which author is called "{name}"?',
            name,
            "entity",
        ),
    }
    for reason, (code, question, answer, kind) in cases.items():
        script = lambda conv, t, c=code, q=question, a=answer: final_turn(c, q, a)  # noqa: E731
        (c,), _ = run(academic, script, max_turns=1, repair=False, answer_types=(kind,))
        assert c.failure_reason == reason, (reason, c.failure_reason, c.failure_detail)
    # a name answered by a bare number (a year printed as an "entity")
    (c,), _ = run(
        academic, lambda conv, t: final_turn(COUNT, "What is the name of the first author?", str(academic[2])),
        max_turns=1, repair=False, answer_types=("entity",),
    )  # fmt: skip
    assert c.failure_reason == "question_form" and "entity" in c.failure_detail
    # a yes/no question needs a boolean answer
    yes_no = final_turn(COUNT, "Are there authors?", str(academic[2]))
    (c,), _ = run(academic, lambda conv, t: yes_no, max_turns=1, repair=False)
    assert c.failure_reason == "question_form"


def test_the_first_and_the_repair_turn_start_with_a_program(academic) -> None:
    """``code_first`` (the default): the first turn and the repair turn are started with a
    ```python block, so a program comes before any question; later turns are not prefixed."""
    n = academic[2]
    script = [final_turn("x = undefined_name"), final_turn(COUNT, answer=str(n))]
    (c,), backend = run(academic, lambda conv, t: script[min(t, 1)])
    assert c.ok and c.repaired
    assert [call[0][-1] for call in backend.calls] == [{"role": "assistant", "content": "```python\n"}] * 2
    assert c.trace[0]["prefix"] == "```python\n" and c.trace[0]["model_text"].startswith("```python\nx = undefined")
    explore = "```python\nprint(2)\n```"
    (_,), b2 = run(academic, lambda conv, t: [explore, explore, explore][t], repair=False)
    assert [call[0][-1]["role"] for call in b2.calls] == ["assistant", "user", "user"]
    (_,), b3 = run(academic, lambda conv, t: script[min(t, 1)], code_first=False)
    assert all(call[0][-1]["role"] == "user" for call in b3.calls)
