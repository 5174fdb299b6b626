"""The labelled judge set on real certified template candidates: every fault type is made, a
semantic fault leaves the program, evidence and answer untouched and so passes every program
check (the certifier, for real, says strict), the hard-coded copy is caught by the certifier,
and the development / test split keeps an item and its copies together."""

from __future__ import annotations

import dataclasses
from collections import Counter

from components.certify.certifier import certify
from components.certify.faults import rerun_as
from components.certify.judge_set import FAULTS, build_judge_set, modifier_change, relation_change, scope_change
from components.quizzer.final import run_final_program


def test_every_fault_type_is_made_and_only_the_question_changes(certify_env) -> None:
    env = certify_env["academic"]
    cands = [c for c in env["candidates"] if c.ok]
    items = build_judge_set(cands, env["schema"])
    kinds = Counter(i.fault for i in items)
    assert set(kinds) == {"correct", *FAULTS} and kinds["correct"] == len(cands)
    by_source = {c.id: c for c in cands}
    for item in items:
        src = by_source[item.source_id]
        assert item.expected == ("accept" if item.fault == "correct" else "reject")
        assert item.answer == src.answer and item.evidence == src.evidence
        if item.fault == "hard_coded_computed":
            assert item.question == src.question and item.final_program != src.final_program
        elif item.fault == "correct":
            assert (item.question, item.final_program) == (src.question, src.final_program)
        else:
            assert item.question != src.question and item.final_program == src.final_program
    splits = {(i.source_id, i.split) for i in items}
    assert len(splits) == len({i.source_id for i in items})  # one side per source item
    capped = build_judge_set(cands, env["schema"], per_fault=2)
    assert max(Counter(i.fault for i in capped).values()) == 2


def test_semantic_faults_pass_the_program_checks_and_hard_coding_does_not(certify_env) -> None:
    env = certify_env["academic"]
    cands = [c for c in env["candidates"] if c.ok]
    items = build_judge_set(cands, env["schema"], per_fault=2)
    by_source = {c.id: c for c in cands}

    def runner(program: str, episode: str):
        return run_final_program(env["qp"], env["schema"], program, episode_id=episode)

    for item in items:
        cand = dataclasses.replace(by_source[item.source_id], question=item.question)
        if item.final_program != cand.final_program:  # run the changed program for a genuine trace
            cand = rerun_as(cand, item.final_program, runner, restate=False)
        cert = certify(
            cand,
            schema=env["schema"],
            query_path=env["qp"],
            snapshot_fingerprint=env["fingerprint"],
            current_fingerprint=env["fingerprint"],
        )
        if item.fault == "hard_coded_computed":
            assert cert.status == "hard_failure" and "hard_coded_answer" in cert.reasons, item.id
        else:
            assert cert.status == "strict", (item.id, cert.reasons)  # no program check sees the fault


def test_the_rewrites_read_as_intended(certify_env) -> None:
    schema = certify_env["academic"]["schema"]
    assert modifier_change("Which author has the most papers?")[0] == "Which author has the fewest papers?"
    assert modifier_change("Connected by a path of at most 3 relationships?")[0].endswith("at least 3 relationships?")
    assert modifier_change('Of the papers "A 3" and "B", which is older?') is None  # numbers in quotes are names
    # the changed word or number is the one outside the quotes, even when a name holds it too
    assert modifier_change('Did "The most 13" cite at least 3 papers?')[0] == 'Did "The most 13" cite at most 3 papers?'
    assert modifier_change('Did "Paper 13" get 3 citations?')[0] == 'Did "Paper 13" get 2 citations?'
    assert modifier_change('Is "Most Wanted" the paper with the most citations?')[0] == (
        'Is "Most Wanted" the paper with the fewest citations?'
    )
    assert (
        relation_change('Which papers did the author "X" wrote?', schema)[0] != 'Which papers did the author "X" wrote?'
    )
    assert relation_change('Who is "wrote"?', schema) is None  # quoted names are never rewritten
    assert scope_change("Which are the papers that cite it?")[0] == "Which is one of the papers that cite it?"
    assert scope_change("Are there any papers that cite it?")[0] == "Are all papers that cite it?"
