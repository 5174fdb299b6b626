"""The judge's re-derivation stage on the real academic graph: entity linking, what the model
sees (never the candidate's program, evidence or answer), reading results by type, the vote, the
stage inside the judge, and the real Qwen2.5-Coder-0.5B accepting a correct item, rejecting a
swapped question and leaving an unparseable derivation uncertain."""

from __future__ import annotations

import dataclasses

import pytest

from components.certify.judge import SemanticJudge, final_verdict
from components.certify.rederive import (
    NO_SUCH_RELATIONSHIP,
    Rederiver,
    bind_missing,
    decide,
    directions,
    judge_examples,
    link_entities,
    parse_derivation,
    read_result,
)
from components.graph.backend import QueryResult
from tests.doubles import ScriptedBackend


@pytest.fixture(scope="module")
def env(certify_env):
    return certify_env["academic"]


@pytest.fixture(scope="module")
def examples(env):
    return judge_examples(env["qp"], env["schema"], n=60)


@pytest.fixture(scope="module")
def single(env):
    """Correct candidates with one evidence query (their query answers their question)."""
    return [c for c in env["candidates"] if c.ok and len(c.evidence) == 1]


def _reply(c) -> str:
    import json

    ev = c.evidence[0]
    return f"```cypher\n{ev['query']}\n```\nPARAMS: {json.dumps(ev['params'])}"


def test_link_entities_finds_the_quoted_nodes_by_parameter(env) -> None:
    qp, schema = env["qp"], env["schema"]
    name, key = qp.run("MATCH (a:Author) RETURN a.name, a.id ORDER BY a.id LIMIT 1").rows[0]
    q = f'How many papers did the author "{name}" write, and is "no such name at all" one?'
    links = link_entities(q, qp, schema)
    assert {"name": name, "label": "Author", "key": "id", "value": key} in links
    assert all(link["name"] != "no such name at all" for link in links)
    # a quote in a name is data, not Cypher
    assert link_entities('Is "x\\" OR 1=1 //" an author?', qp, schema) == []
    assert link_entities("No quotes here?", qp, schema) == []


def test_parse_derivation() -> None:
    q, p, why = parse_derivation(
        '```cypher\nMATCH (a:Author {id: $start}) RETURN a.name AS answer;\n```\nPARAMS: {"start": "author_1"}'
    )
    assert q == "MATCH (a:Author {id: $start}) RETURN a.name AS answer" and p == {"start": "author_1"} and not why
    q, p, _ = parse_derivation("Sure.\nMATCH (a:Author) RETURN count(a) AS answer\nPARAMS: {}")
    assert q == "MATCH (a:Author) RETURN count(a) AS answer" and p == {}
    assert parse_derivation("I cannot answer that.")[0] is None
    q, p, why = parse_derivation("```cypher\nMATCH (a) RETURN a\n```\nPARAMS: {start: 1}")
    assert q and p is None and "JSON" in why
    assert parse_derivation('```\nRETURN 1 AS answer\n```\nPARAMS: ["a"]')[1] is None


@pytest.mark.parametrize(
    ("columns", "rows", "answer_type", "value"),
    [
        (("answer",), ((True,),), "boolean", True),
        (("answer",), ((0,),), "boolean", False),
        (("answer",), ((7,),), "number", 7),
        (("answer",), (("7",),), "number", None),  # a text is not a number
        (("name", "score"), (("Ann", 9),), "number", 9),  # no answer column: the last one
        (("name", "score"), (("Ann", 9),), "entity", "Ann"),  # … the first for an entity
        (("answer",), (("b",), ("a",), ("b",)), "set", ["a", "b"]),
        (("answer",), ((["b", "a"],),), "set", ["a", "b"]),
        (("answer",), (("Ann",), ("Bo",)), "entity", None),  # two entities for one
        (("answer",), (), "number", None),
        (("answer",), ((None,),), "entity", None),
        (("answer",), ((True,),), "set", None),  # a yes/no is not a set of names
        (("answer",), ((False,),), "entity", None),
    ],
)
def test_read_result_by_type(columns, rows, answer_type, value) -> None:
    got, why = read_result(QueryResult(columns=columns, rows=rows, truncated=False, elapsed_ms=0.0), answer_type)
    assert got == value
    assert bool(why) == (value is None)


def test_the_vote() -> None:
    assert decide([], "3", "number") == ("uncertain", None, 0)
    assert decide(["3", "3.0", "4"], "3", "number") == ("accept", "3", 2)
    assert decide(["4", "4", "3"], "3", "number") == ("reject", "4", 1)
    assert decide(["4"], "3", "number") == ("reject", "4", 0)
    assert decide(["4"], "3", "number", min_votes=2) == ("uncertain", "4", 0)  # asked for 2 votes to reject
    assert decide(["4", "3"], "3", "number")[0] == "uncertain"  # as many agree as disagree
    assert decide(["yes", "no"], "yes", "boolean")[0] == "uncertain"  # a tie is not a majority
    assert decide(["a; b", "b; a"], "b, a", "set")[0] == "accept"


def test_each_direction_reads_as_its_words_say_on_the_real_graph(env, examples) -> None:
    """The pattern written beside "the Papers that X cites" returns X's references, the one beside
    "the Papers that cite X" the papers citing X — run on the real database, so the text cannot be
    backwards; and it is in the judge's system prompt."""
    import re

    qp, schema = env["qp"], env["schema"]
    text = directions(schema)
    assert text.count('reads "a ') == sum(len(r.triples) for r in schema.rel_types)
    patterns = dict(re.findall(r"^  the Papers that (X cites|cite X): (.+)$", text, re.M))
    x = qp.run(
        "MATCH (p:Paper)-[:CITES]->(:Paper) WITH p, count(*) AS n MATCH (:Paper)-[:CITES]->(p) "
        "RETURN p.id ORDER BY n DESC, p.id LIMIT 1"
    ).rows[0][0]
    out = {r[0] for r in qp.run("MATCH (p:Paper {id: $x})-[:CITES]->(q:Paper) RETURN q.id", {"x": x}).rows}
    into = {r[0] for r in qp.run("MATCH (q:Paper)-[:CITES]->(p:Paper {id: $x}) RETURN q.id", {"x": x}).rows}
    assert out and into and out != into
    for words, want in (("X cites", out), ("cite X", into)):
        pattern = patterns[words]
        other = "b" if "(b:" in pattern else "a"
        got = {r[0] for r in qp.run(f"MATCH {pattern} RETURN {other}.id", {"start": x}).rows}
        assert got == want, words
    assert "the Authors that wrote X: (a:Author)-[:WROTE]->(x:Paper {id: $start})" in text
    msgs, _ = Rederiver(ScriptedBackend([]), qp, schema, examples).messages("How many papers?", "number", [])
    assert text in msgs[0]["content"]


def test_the_model_never_sees_the_candidates_program_evidence_or_answer(env, examples, single) -> None:
    c = dataclasses.replace(single[0], answer="ZQX_ANSWER_71", final_program="print('ZQX_PROGRAM_52')")
    backend = ScriptedBackend(["no query"] * 3)
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=3).rederive([c])[0]
    [[conv]] = backend.calls
    text = "\n".join(m["content"] for m in conv)
    assert "ZQX_ANSWER_71" not in text and "ZQX_PROGRAM_52" not in text
    assert c.evidence[0]["query"] not in text  # the candidate's own query is not shown
    assert c.question in conv[-1]["content"] and conv[0]["role"] == "system"
    assert c.question not in rd.examples and len(rd.examples) == 3
    assert (rd.verdict, rd.executable, [d.status for d in rd.derivations]) == ("uncertain", 0, ["no_query"] * 3)


def test_scripted_derivations_give_each_verdict_and_keep_their_texts(env, examples, single) -> None:
    a, b = (
        single[0],
        next(c for c in single[1:] if c.answer_type == single[0].answer_type and c.answer != single[0].answer),
    )
    refused = "```cypher\nMATCH (n) DETACH DELETE n\n```"
    backend = ScriptedBackend(
        [_reply(a)] * 3 + [_reply(b)] * 2 + ["nothing"] + ["```cypher\nMATCH (x:Nope RETURN x\n```", refused, "hm"]
    )
    asked = [a, *(dataclasses.replace(a, question=f"{a.question} ({i})") for i in (1, 2))]
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=3, repairs=0).rederive(asked)
    assert [r.verdict for r in rd] == ["accept", "reject", "uncertain"]
    assert rd[0].agree == 3 and rd[0].derived is not None
    assert rd[1].derived is not None and rd[1].agree == 0  # the judge's own answer is recorded
    assert [d.status for d in rd[2].derivations] == ["refused", "refused", "no_query"]
    assert rd[1].to_json()["derivations"][0]["text"] == _reply(b)


def test_a_failed_query_is_repaired_once_from_its_error(env, examples, single) -> None:
    """A derivation whose query the graph refuses is shown the error and written again (one
    batched turn); the repaired attempt votes, the first is kept beside it."""
    a = single[0]
    broken = "```cypher\nMATCH (x:Paper) RETURN x.no_such_property AS answer\n```\nPARAMS: {}"
    backend = ScriptedBackend([_reply(a), broken, broken, _reply(a), "still no query"])
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=3).rederive([a])[0]
    assert backend.batches == [1, 2]  # the first round, then one repair turn for the two refused
    [_, *repair_chats] = backend.calls
    repair = repair_chats[0][0]
    assert repair[-2] == {"role": "assistant", "content": broken} and "no_such_property" in repair[-1]["content"]
    assert [d.status for d in rd.derivations] == ["answer", "answer", "no_query"]
    assert rd.derivations[1].first is not None and rd.derivations[1].first.status == "refused"
    assert rd.to_json()["derivations"][1]["first"]["status"] == "refused"
    assert (rd.verdict, rd.agree, rd.executable) == ("accept", 2, 2)
    # a repair turn the backend cannot answer leaves the first attempts, saying why
    rd = Rederiver(ScriptedBackend([broken] * 3), env["qp"], env["schema"], examples, k=3).rederive([a])[0]
    assert rd.verdict == "uncertain" and all(d.status == "refused" for d in rd.derivations)
    assert "repair turn failed" in rd.derivations[0].detail


def test_a_reading_the_schema_cannot_hold_answers_nothing(env, examples, single) -> None:
    """A derivation whose pattern no schema triple matches (a paper that "wrote" a venue) is not
    run: its answer is "nothing" ("no" for a yes/no question), which a candidate claiming members
    disagrees with — the question asks for a relationship this graph does not have."""
    a = next(c for c in single if c.answer_type in ("set", "entity"))
    impossible = "```cypher\nMATCH (p:Paper {id: $start})-[:WROTE]->(v:Venue) RETURN v.name AS answer\n```"
    backend = ScriptedBackend([impossible] * 3)
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=3).rederive([a])[0]
    assert backend.batches == [1]  # nothing to repair: the query is well formed
    assert [d.status for d in rd.derivations] == ["impossible"] * 3 and "WROTE" in rd.derivations[0].detail
    assert (rd.verdict, rd.derived) == ("reject", NO_SUCH_RELATIONSHIP)
    assert rd.answers == [NO_SUCH_RELATIONSHIP] * 3 and rd.executable == 3  # they vote (benchmarks/judge.py too)
    yes_no = dataclasses.replace(a, answer="no", answer_type="boolean")
    rd = Rederiver(ScriptedBackend([impossible] * 3), env["qp"], env["schema"], examples, k=3).rederive([yes_no])[0]
    assert rd.verdict == "accept"  # "no" is what a relationship the graph cannot hold answers
    turned = "```cypher\nMATCH (p:Paper {id: $start})<-[:PUBLISHED_IN]-(v:Venue) RETURN v.name AS answer\n```"
    rd = Rederiver(ScriptedBackend([turned] * 3), env["qp"], env["schema"], examples, k=3).rederive([a])[0]
    assert rd.derivations[0].status == "impossible" and rd.derivations[0].detail.startswith("direction_error")


def test_rederivation_is_the_judges_first_stage(env, examples, single) -> None:
    a = single[0]
    # re-derivation: a accepted, a rejected (another item's query); the review only for the first
    backend = ScriptedBackend([_reply(a)] * 3 + [_reply(single[1])] * 3 + ["VERDICT: accept", "VERDICT: accept"])
    if single[1].answer == a.answer:
        pytest.skip("the first two items share an answer")
    judge = SemanticJudge(backend, rederiver=Rederiver(backend, env["qp"], env["schema"], examples, k=3))
    vs = judge.judge([a, dataclasses.replace(a, question=a.question + " (again)")])
    assert backend.batches == [2, 1, 1]  # re-derivation (2 × 3 samples), review stages 1 and 2 for one
    assert [(v.rederive, v.stage1, v.verdict) for v in vs] == [
        ("accept", "accept", "accept"),
        ("reject", "skipped", "reject"),
    ]
    assert vs[1].to_json()["rederivation"]["verdict"] == "reject"
    solo = ScriptedBackend([_reply(a)] * 3)
    alone = SemanticJudge(solo, rederiver=Rederiver(solo, env["qp"], env["schema"], examples, k=3), review=False)
    assert alone.judge([a])[0].verdict == "accept" and solo.batches == [1]
    with pytest.raises(ValueError, match="needs"):
        SemanticJudge(backend, review=False)
    assert final_verdict("uncertain", "accept") == "uncertain"


def test_one_question_is_derived_once_and_missing_parameters_are_bound(env, examples, single) -> None:
    a = single[0]
    bare = _reply(a).split("\nPARAMS:")[0]  # the query alone: $start etc. bound from the named nodes
    backend = ScriptedBackend([bare] * 3)
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=3).rederive([a, dataclasses.replace(a)])
    assert backend.batches == [1]
    assert [r.verdict for r in rd] == ["accept", "accept"], rd[0].to_json()
    assert rd[0].derivations[0].params == a.evidence[0]["params"]
    assert bind_missing(
        "MATCH (n) WHERE n.id IN $ids RETURN n", {}, [{"name": "x", "value": 1}, {"name": "y", "value": 2}]
    ) == {"ids": [1, 2]}
    assert bind_missing(
        "RETURN $start, $other", {"start": 2}, [{"name": "x", "value": 1}, {"name": "y", "value": 2}]
    ) == {"start": 2, "other": 1}


def test_a_backend_failure_is_uncertain(env, examples, single) -> None:
    rd = Rederiver(ScriptedBackend([], fail=True), env["qp"], env["schema"], examples).rederive(single[:2])
    assert [r.verdict for r in rd] == ["uncertain", "uncertain"] and "backend down" in (rd[0].error or "")


class _SeedSpy(ScriptedBackend):
    """The scripted backend, recording each call's per-request seeds."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seeds: list[tuple[int, ...] | None] = []

    def generate(self, conversations, params):
        self.seeds.append(params.seeds)
        return super().generate(conversations, params)


def test_questions_go_in_chunks_with_the_seeds_of_one_call_and_progress_after_each(env, examples, single) -> None:
    """Chunks of one question: derivations and repairs keep the seeds one batched call gives them
    (seed + question index; seed + place among the turn's repairs), progress counts candidates
    (a question asked twice counts twice), and a chunk the backend fails on is uncertain alone."""
    a, b = single[0], next(c for c in single if c.question != single[0].question)
    broken = "```cypher\nMATCH (x:Paper) RETURN x.no_such_property AS answer\n```\nPARAMS: {}"
    backend = _SeedSpy([broken, broken, _reply(a), _reply(a), broken, broken, _reply(b), _reply(b)])
    seen: list[int] = []
    rd = Rederiver(backend, env["qp"], env["schema"], examples, k=2, seed=7, chunk=1).rederive(
        [a, b, dataclasses.replace(b)], progress=seen.append
    )
    assert backend.batches == [1, 2, 1, 2] and backend.seeds == [(7,), (7, 8), (8,), (9, 10)]
    assert seen == [1, 2] and [r.verdict for r in rd] == ["accept"] * 3

    class _Once(_SeedSpy):  # fails on its second call: the second chunk
        def generate(self, conversations, params):
            self.fail = len(self.calls) == 1
            return super().generate(conversations, params)

    rd = Rederiver(_Once([_reply(a), _reply(a)]), env["qp"], env["schema"], examples, k=2, chunk=1).rederive([a, b])
    assert [r.verdict for r in rd] == ["accept", "uncertain"] and "backend down" in (rd[1].error or "")
    assert rd[0].error is None


@pytest.mark.slow
def test_the_real_qwen_accepts_a_correct_item_rejects_a_swapped_question_and_is_uncertain_when_cut(
    env, examples, single
) -> None:
    """Qwen2.5-Coder-0.5B (its PyPI wheel) on the real graph: "List the papers that the paper X
    cites" with its true answer is re-derived and accepted; the same answer under the question
    about another paper (a swapped question whose answer differs) is rejected; with 4 new tokens
    no derivation parses, so the verdict is uncertain."""
    from components.llm.transformers_backend import TransformersBackend

    cites = (
        env["qp"]
        .run(
            "MATCH (p:Paper)-[:CITES]->(q:Paper) WITH p, collect(q.title) AS cited "
            "RETURN p.title, cited ORDER BY p.id LIMIT 2"
        )
        .rows
    )
    (t1, cited1), (t2, cited2) = cites
    assert sorted(cited1) != sorted(cited2)

    def item(title: str):
        q = f'List the papers that the paper "{title}" cites, if any.'
        return dataclasses.replace(single[0], question=q, answer="; ".join(sorted(cited1)), answer_type="set")

    llm = TransformersBackend("qwen2.5-coder-0.5b", threads=1)
    try:
        rd = Rederiver(llm, env["qp"], env["schema"], examples, k=3, seed=0).rederive([item(t1), item(t2)])
        cut = Rederiver(llm, env["qp"], env["schema"], examples, k=1, max_new_tokens=4).rederive([item(t1)])[0]
    finally:
        llm.close()
    assert rd[0].verdict == "accept", rd[0].to_json()
    assert rd[1].verdict == "reject", rd[1].to_json()
    assert rd[1].derived is not None and rd[1].derived != rd[0].derived
    assert cut.verdict == "uncertain" and cut.derivations[0].status == "no_query"


def test_certification_with_the_judge_on_keeps_each_candidates_derivations(tmp_path_factory) -> None:
    """`certify.judge: on` runs re-derivation then the review (a tiny random model on the real
    graph): every certified row's judge record holds its derivations, and a random model's
    derivations never admit anything."""
    import json

    from components.certify.dataset import CertifyConfig, run_certification
    from components.graph.load import load_graph
    from components.graph.sources.demo import generate
    from components.llm import tiny_random_model
    from components.quizzer.template import TemplateQuizzer

    root = tmp_path_factory.mktemp("judged")
    load_graph(generate("academic", seed=0, scale=120), root / "db")
    from components.cypher.query_path import ReadOnlyQueryPath
    from components.graph.ladybug import LadybugBackend

    backend = LadybugBackend(root / "db")
    schema = backend.schema()
    cands = TemplateQuizzer(ReadOnlyQueryPath(backend, schema=schema), schema, seed=0).generate(4)
    backend.close()
    cands[3].meta["pool"] = {"source": "held_out", "kind": "template"}  # an evaluation-only question
    model = tiny_random_model(root / "m", seed=0)
    config = CertifyConfig(
        judge="on", judge_options={"model_dir": str(model), "threads": 1}, judge_samples=2, fault_sample=0
    )
    progress: dict[str, tuple[int, int]] = {}
    run = run_certification(
        cands,
        str(root / "db"),
        config,
        claim_current=True,
        progress=lambda k, done, total: progress.update({k: (done, total)}),
    )
    assert progress["judge: re-derivation"] == (3, 3) and progress["judge: review"] == (3, 3)  # not the held-out one
    held = run.rows[3]
    assert held["status"] == "strict" and held["verdict"] == "skipped" and not held["admitted"]
    assert json.loads(held["judge_json"]) is None  # the judge never read it
    from components.certify.dataset import funnel

    stages = dict(funnel(run.rows))
    assert stages["candidates"] == 3 and stages["held_out:strict"] == 1 and "judge:skipped" not in stages
    judged = [r for r in run.rows if r["verdict"] not in ("skipped", "not_judged")]
    assert judged
    for row in judged:
        record = json.loads(row["judge_json"])
        assert len(record["rederivation"]["derivations"]) == 2
        assert record["rederive"] in ("reject", "uncertain") and row["verdict"] in ("reject", "uncertain")
        assert not row["admitted"]
