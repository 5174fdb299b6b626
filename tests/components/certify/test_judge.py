"""The semantic judge: what it sees (never trace / axes / reasoning), verdict parsing, the
combination rule, batching, and one run on a real tiny random model."""

from __future__ import annotations

import dataclasses

import pytest

from components.certify.judge import (
    JudgeInput,
    JudgeVerdict,
    SemanticJudge,
    combine_verdicts,
    judge_messages,
    parse_verdict,
)
from components.llm.base import GenerationBackend
from tests.doubles import ScriptedBackend

MARKERS = (
    "ZQX_TRACE_MARKER_91",
    "ZQX_AXES_MARKER_37",
    "ZQX_REASONING_MARKER_55",
    "ZQX_NEIGHBOURHOOD_MARKER_12",
    "ZQX_META_MARKER_44",
)


def _marked(candidate):
    c = dataclasses.replace(candidate)
    c.trace = [{"role": "assistant", "content": f"thinking {MARKERS[2]}", "note": MARKERS[0]}]
    c.axes = {"difficulty": MARKERS[1], "answer_type": MARKERS[1]}
    c.neighbourhood = {"node": {"name": MARKERS[3]}}
    c.meta = {"realized_axes": {"difficulty": MARKERS[1]}, "reasoning": MARKERS[2], "x": MARKERS[4]}
    return c


@pytest.fixture(scope="module")
def candidates(certify_env):
    return [c for c in certify_env["academic"]["candidates"] if c.ok][:3]


def test_scripted_backend_is_a_generation_backend() -> None:
    assert isinstance(ScriptedBackend([]), GenerationBackend)


def test_judge_never_sees_trace_axes_or_reasoning(candidates) -> None:
    marked = [_marked(c) for c in candidates]
    backend = ScriptedBackend(["VERDICT: accept"] * 6)
    verdicts = SemanticJudge(backend).judge(marked)
    assert len(backend.calls) == 2  # one batched call per stage
    assert all(len(call) == len(marked) for call in backend.calls)
    for call in backend.calls:
        for conv in call:
            text = "\n".join(m["content"] for m in conv)
            for m in MARKERS:
                assert m not in text
    inp = JudgeInput.from_candidate(marked[0])
    assert not any(m in repr(inp.to_json()) for m in MARKERS)
    # but it does see the QA, the program, the evidence preview and the structure
    prompt = backend.calls[0][0][1]["content"]
    c0 = marked[0]
    assert c0.question in prompt and c0.answer in prompt
    assert c0.evidence[0]["query"] in prompt and "structure:" in prompt and '"patterns"' in prompt
    assert backend.calls[1][0][1]["content"].startswith("Stage 2")
    assert [v.verdict for v in verdicts] == ["accept"] * len(marked)


def test_preview_is_bounded(candidates) -> None:
    c = dataclasses.replace(candidates[0])
    ev = dict(c.evidence[0])
    ev["rows"] = [[f"row{i}", "x" * 5000] for i in range(50)]
    ev["row_count"], ev["truncated"] = 50, True
    c.evidence = [ev]
    inp = JudgeInput.from_candidate(c, preview_rows=3)
    assert len(inp.evidence[0]["rows"]) == 3 and inp.evidence[0]["row_count"] == 50
    assert inp.evidence[0]["truncated"] is True
    text = inp.render()
    assert "row3" not in text and "TRUNCATED" in text and "showing first 3" in text
    assert len(text) < 6000 + len(c.final_program)
    assert inp.structure[0]["ok"] is True


@pytest.mark.parametrize(
    "text, expected",
    [
        ("checks ok\nVERDICT: accept", "accept"),
        ("VERDICT: REJECT", "reject"),
        ("verdict :   Uncertain.", "uncertain"),
        ("**Verdict:** Accepted", "accept"),
        ("VERDICT: reject\nOn reflection...\nVERDICT: accept", "accept"),
        ("VERDICT: accept\nVERDICT: reject", "reject"),
        ("I accept this pair.", "uncertain"),
        ("", "uncertain"),
        ("VERDICT: maybe", "uncertain"),
        ("\x00\ufffd garbage ### verdict", "uncertain"),
    ],
)
def test_parse_verdict(text: str, expected: str) -> None:
    assert parse_verdict(text) == expected


@pytest.mark.parametrize(
    "s1, s2, final",
    [
        ("accept", "accept", "accept"),
        ("accept", "reject", "reject"),
        ("reject", "accept", "reject"),
        ("accept", "uncertain", "uncertain"),
        ("uncertain", "accept", "uncertain"),
        ("uncertain", "reject", "reject"),
        ("uncertain", "uncertain", "uncertain"),
        ("reject", "skipped", "reject"),
    ],
)
def test_combination_rule(s1: str, s2: str, final: str) -> None:
    assert combine_verdicts(s1, s2) == final


def test_stages_batched_and_short_circuit(candidates) -> None:
    c = candidates[:3]
    # stage 1: accept, reject, garbage; stage 2 only for the two not rejected: reject, accept
    backend = ScriptedBackend(["VERDICT: accept", "VERDICT: reject", "blah", "VERDICT: reject", "VERDICT: accept"])
    vs = SemanticJudge(backend, max_new_tokens=32, seed=3, ask_verdict=False).judge(c)
    assert [len(call) for call in backend.calls] == [3, 2]
    assert [(v.stage1, v.stage2, v.verdict) for v in vs] == [
        ("accept", "reject", "reject"),
        ("reject", "skipped", "reject"),
        ("uncertain", "accept", "uncertain"),
    ]
    assert vs[0].prompt_tokens == 20 and vs[1].completion_tokens == 5
    j = vs[0].to_json()
    assert j["verdict"] == "reject" and j["stage1_text"] == "VERDICT: accept" and j["error"] is None
    assert isinstance(vs[0], JudgeVerdict)


def test_a_reply_cut_before_its_verdict_is_asked_for_it(candidates) -> None:
    """A stage reply with no verdict line (cut at max_new_tokens) is continued once from
    ``VERDICT:`` — only those replies, in one batched call of a few tokens; an explicit
    ``uncertain`` is a verdict and is not asked again."""
    cut = "1. Entities: the question names Ann, the query is anchored on"
    replies = [cut, "checks...\nVERDICT: uncertain", cut, " reject", " Accept", "VERDICT: accept", "VERDICT: accept"]
    backend = ScriptedBackend(replies)
    vs = SemanticJudge(backend, max_new_tokens=16).judge(candidates[:3])
    # stage 1 (3), its follow-ups (2), stage 2 for the two not rejected (2)
    assert backend.batches == [3, 2, 2]
    follow = backend.calls[1]
    assert all(conv[-1]["role"] == "assistant" and conv[-1]["content"] == cut + "\n\nVERDICT:" for conv in follow)
    assert [(v.stage1, v.stage2, v.verdict, v.asked) for v in vs] == [
        ("reject", "skipped", "reject", [1]),
        ("uncertain", "accept", "uncertain", []),
        ("accept", "accept", "accept", [1]),
    ]
    assert vs[0].stage1_text == cut + "\n\nVERDICT: reject" and vs[0].to_json()["asked"] == [1]
    assert vs[0].prompt_tokens == 20 and vs[0].completion_tokens == 10  # both calls counted
    # switched off, the cut reply stays uncertain
    off = SemanticJudge(ScriptedBackend([cut, "VERDICT: accept"]), ask_verdict=False).judge(candidates[:1])
    assert off[0].stage1 == "uncertain" and off[0].asked == []


def test_backend_failure_is_uncertain(candidates) -> None:
    vs = SemanticJudge(ScriptedBackend([], fail=True)).judge(candidates[:2])
    assert [v.verdict for v in vs] == ["uncertain", "uncertain"]
    assert all("backend down" in (v.error or "") for v in vs)
    assert SemanticJudge(ScriptedBackend([])).judge([]) == []


def test_judge_messages_stages(candidates) -> None:
    inp = JudgeInput.from_candidate(candidates[0])
    m1, m2 = judge_messages(inp, 1), judge_messages(inp, 2)
    assert m1[0]["role"] == "system" and "VERDICT" in m1[1]["content"]
    assert "Hard-coding" in m1[1]["content"] and "claim" in m2[1]["content"]
    with pytest.raises(ValueError):
        judge_messages(inp, 3)


def test_tiny_random_model_gives_parseable_or_uncertain(candidates, tmp_path_factory) -> None:
    pytest.importorskip("torch")
    from components.llm import make_backend, tiny_random_model

    path = tiny_random_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    backend = make_backend("transformers", model_dir=path, threads=1)
    try:
        vs = SemanticJudge(backend, max_new_tokens=8, seed=0).judge(candidates[:2])
    finally:
        backend.close()
    assert len(vs) == 2
    for v in vs:
        assert v.error is None
        assert v.verdict in ("accept", "reject", "uncertain")
        assert v.stage1 in ("accept", "reject", "uncertain")
        assert v.stage2 in ("accept", "reject", "uncertain", "skipped")
        assert v.prompt_tokens > 100 and v.completion_tokens > 0
        # a random model's 8 tokens hold no verdict line: the real backend continued it from "VERDICT:"
        assert v.asked and "\n\nVERDICT:" in v.stage1_text
