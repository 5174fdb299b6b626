"""Rewards in TRL's reward-function style, registered by name (:data:`REWARDS`).

Each reward is ``fn(completions, **kwargs) -> list[float | None]``: ``completions`` are the
generated texts (or conversations: lists of ``{"role", "content"}`` messages, whose assistant
turns are read), the other keyword arguments are dataset columns (one value per completion) —
and, under a custom rollout, the fields the environment returns, which TRL forwards the same
way. ``None`` means "not applicable" (the row has no gold answer). Unknown keyword arguments
are ignored, as TRL passes every column.

The final answer (:func:`predictions`): under a multi-turn rollout, the answer the environment
parsed from the episode's answer step (the ``parsed_answer`` column the rollout hands over, the
same value evaluation scores; ``None`` there — the episode never answered — is unparseable), so
text the environment inserted never counts as the model's answer. Without that column (a
single-turn completion) it is the content of the last ``<answer>…</answer>`` block, else of a last
line ``Answer: …`` (also right after a closing tag, as in GRAIN's ``</think> Answer: 16``);
neither: the answer is unparseable.

* ``graphcert`` — ``R = a + 0.10·(1 − a)·e``; ``a`` token F1 of the answer (sets compared as
  sets), ``e`` = S_evidence of the rollout's marked queries (``pred_evidence``) against the gold
  evidence (``evidence_queries``, or ``evidence_json`` of a certified row); an unparseable answer
  gives 0, an empty marked set on either side e = 0.
* ``graphdancer`` — ``EM − 0.2·EM·(1 − VF) + 0.1·(1 − EM)·VF·AP``: EM normalised exact match,
  VF the whole trajectory followed the tag protocol and ended with an answer (``valid_format``
  from the episode, else parsed from the completion), AP an answer is present.
* ``grain`` — ``0.5·correct + 0.4·structure + 0.1·format``: ``structure`` the mean of node-F1,
  weighted edge-F1 and exact match of the predicted graph IR (the last ``<graph>`` block)
  against the ground truth (``gold_ir``); ``correct`` the answer matches (normalised, or equal
  as numbers); ``format`` a valid IR and an answer are present. GRAIN names the three terms but
  not their weights: answer correctness stays the main signal, structure recovery is weighted
  close behind it (GRAIN's point is rewarding the intermediate graph), format is a small
  shaping term; an invalid IR scores 0 structure. Range [0, 1].
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from components.rubric.evidence import multiset_f1, s_evidence
from components.rubric.metrics import exact_match, normalize_answer, token_f1

__all__ = [
    "REWARDS",
    "completion_text",
    "extract_answer",
    "get_reward",
    "grain_correct",
    "grain_reward",
    "graph_structure_scores",
    "graphcert_reward",
    "graphcert_terms",
    "graphdancer_reward",
    "predictions",
]

_ANSWER: Final = re.compile(r"<answer>(.*?)</answer>", re.S)
_ANSWER_LINE: Final = re.compile(r"(?:^|>)\s*(?:final\s+)?answer\s*:\s*(.+?)\s*$", re.I | re.M)
_GRAPH_BLOCK: Final = re.compile(r"<graph>.*?</graph>", re.S)

Reward = Callable[..., list[float | None]]


def _assistant_turns(completion: Any) -> list[str]:
    if isinstance(completion, str):
        return [completion]
    if isinstance(completion, Mapping):
        return [str(completion.get("content") or "")]
    if isinstance(completion, Sequence):
        return [
            str(m.get("content") or "")
            for m in completion
            if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        ]
    return []


def completion_text(completion: Any) -> str:
    """The assistant text of a completion (turns joined by newlines)."""
    return "\n".join(_assistant_turns(completion))


def extract_answer(completion: Any) -> str | None:
    """The final answer, or ``None`` when there is none.

    >>> extract_answer("<think>…</think><answer> Paris </answer>"), extract_answer("</think> Answer: 16")
    ('Paris', '16')
    >>> extract_answer("I think it is Paris") is None
    True
    """
    text = completion_text(completion)
    blocks = _ANSWER.findall(text)
    if blocks:
        return blocks[-1].strip()
    lines = _ANSWER_LINE.findall(text)
    return lines[-1].strip() if lines else None


def _column(kwargs: Mapping[str, Any], name: str, n: int) -> list[Any]:
    value = kwargs.get(name)
    if value is None:
        return [None] * n
    return list(value)


def predictions(completions: Sequence[Any], kwargs: Mapping[str, Any]) -> list[str | None]:
    """Each completion's final answer: the environment's ``parsed_answer`` column when the
    rollout provides one (what evaluation scores), else :func:`extract_answer` of the text.

    >>> predictions(["<answer>7</answer>", "x"], {"parsed_answer": ["12", None]})
    ['12', None]
    >>> predictions(["<answer>7</answer>"], {})
    ['7']
    """
    parsed = kwargs.get("parsed_answer")
    if parsed is None:
        return [extract_answer(c) for c in completions]
    values = list(parsed)
    if len(values) != len(completions):
        raise ValueError(f"{len(completions)} completions but {len(values)} parsed answers")
    return [None if v is None else str(v).strip() for v in values]


def _queries(value: Any) -> list[str]:
    """Marked queries from a list of query strings, evidence items, or their JSON."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    if isinstance(value, Mapping):
        value = [value]
    out = []
    for item in value or []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("query"), str):
            out.append(item["query"])
    return out


def graphcert_terms(
    completions: Sequence[Any], answer: Sequence[Any] | None = None, **kwargs: Any
) -> list[tuple[float, float] | None]:
    """The GraphCert reward's two terms per completion, ``(a, e)``: ``a`` the answer's token F1,
    ``e`` S_evidence of the marked queries — each measured on its own (``e`` also where ``a`` = 1,
    so a log shows both); an unparseable answer gives ``(0.0, 0.0)``; ``None``: no gold answer.

    >>> q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)"
    >>> graphcert_terms(["<answer>12</answer>", "<answer>13</answer>", "no answer"],
    ...                 answer=["12"] * 3, evidence_queries=[[q]] * 3, pred_evidence=[[q]] * 3)
    [(1.0, 1.0), (0.0, 1.0), (0.0, 0.0)]
    """
    return _graphcert_terms(completions, answer, kwargs, evidence_when_right=True)


def _graphcert_terms(
    completions: Sequence[Any], answer: Sequence[Any] | None, kwargs: Mapping[str, Any], *, evidence_when_right: bool
) -> list[tuple[float, float] | None]:
    """:func:`graphcert_terms`; ``evidence_when_right=False`` skips S_evidence (0.0) where
    ``a`` = 1, whose reward is 1 regardless (the reward's hot path parses no query it needs not)."""
    n = len(completions)
    gold = _column({"answer": answer}, "answer", n)
    types = _column(kwargs, "answer_type", n)
    gold_ev = (
        _column(kwargs, "evidence_queries", n)
        if kwargs.get("evidence_queries") is not None
        else _column(kwargs, "evidence_json", n)
    )
    pred_ev = _column(kwargs, "pred_evidence", n)
    out: list[tuple[float, float] | None] = []
    for pred, g, t, gq, pq in zip(predictions(completions, kwargs), gold, types, gold_ev, pred_ev, strict=True):
        if g is None:
            out.append(None)
        elif pred is None:
            out.append((0.0, 0.0))
        else:
            a = token_f1(pred, g, t)
            e = s_evidence(_queries(gq), _queries(pq)) if a < 1.0 or evidence_when_right else 0.0
            out.append((a, e))
    return out


def graphcert_reward(
    completions: Sequence[Any], answer: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """GraphCert: ``R = a + 0.10·(1 − a)·e`` of :func:`graphcert_terms` (the module docstring).

    >>> q = "MATCH (a:Author)-[:WROTE]->(p:Paper) RETURN count(p)"
    >>> graphcert_reward(["<answer>12</answer>", "<answer>13</answer>", "no answer"],
    ...                  answer=["12"] * 3, evidence_queries=[[q]] * 3, pred_evidence=[[q]] * 3)
    [1.0, 0.1, 0.0]
    """
    terms = _graphcert_terms(completions, answer, kwargs, evidence_when_right=False)
    return [None if t is None else min(1.0, t[0] + 0.10 * (1.0 - t[0]) * t[1]) for t in terms]


def _valid_format(completion: Any) -> bool:
    from components.tools.protocol import StepKind, parse_step

    turns = [t for t in _assistant_turns(completion) if t.strip()]
    if not turns:
        return False
    kinds = [parse_step(t).kind for t in turns]
    return kinds[-1] is StepKind.ANSWER and all(k in (StepKind.CALL, StepKind.ANSWER) for k in kinds[:-1])


def graphdancer_reward(
    completions: Sequence[Any], answer: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """GraphDancer: ``EM − 0.2·EM·(1 − VF) + 0.1·(1 − EM)·VF·AP``.

    >>> good = "<think>done</think><answer>Paris</answer>"
    >>> graphdancer_reward([good, "<answer>Paris</answer>", "<think>x</think><answer>Rome</answer>"],
    ...                    answer=["Paris"] * 3)
    [1.0, 0.8, 0.1]
    """
    n = len(completions)
    gold = _column({"answer": answer}, "answer", n)
    types = _column(kwargs, "answer_type", n)
    vfs = _column(kwargs, "valid_format", n)
    out: list[float | None] = []
    for comp, pred, g, t, vf in zip(completions, predictions(completions, kwargs), gold, types, vfs, strict=True):
        if g is None:
            out.append(None)
            continue
        em = exact_match(pred, g, t) if pred is not None else 0.0
        valid = float(bool(vf) if vf is not None else _valid_format(comp))
        present = float(bool(pred))
        out.append(em - 0.2 * em * (1.0 - valid) + 0.1 * (1.0 - em) * valid * present)
    return out


def _ir(value: Any) -> Any:
    from components.tools.graph_ir import GraphIR, parse_graph_ir, validate_ir

    if isinstance(value, GraphIR):
        return value
    if isinstance(value, Mapping):
        return validate_ir(dict(value))
    if isinstance(value, str):
        return parse_graph_ir(value)
    return None


def _edges(ir: Any) -> list[tuple[str, str, float]]:
    out = []
    for u, v, w in ir.edges:
        a, b = normalize_answer(u), normalize_answer(v)
        if not ir.directed and b < a:
            a, b = b, a
        out.append((a, b, round(float(w), 9)))
    return out


def graph_structure_scores(pred_ir: Any, gold_ir: Any) -> dict[str, float]:
    """Node-F1, weighted edge-F1 and exact match of a predicted IR against the ground truth
    (names compared normalised; an undirected edge in either orientation; an edge matches only
    with its weight). An invalid predicted IR scores 0 on all three.

    >>> g = {"problem_type": "bfs", "graph": {"data": {"a": {"b": 1}, "b": {"c": 1}},
    ...      "directed": False, "weighted": False}, "parameters": {"start": "a"}}
    >>> graph_structure_scores(g, g)
    {'node_f1': 1.0, 'edge_f1': 1.0, 'exact': 1.0}
    """
    from components.tools.graph_ir import GraphIR

    pred, gold = _ir(pred_ir), _ir(gold_ir)
    if not isinstance(gold, GraphIR):
        raise ValueError(f"invalid gold graph IR: {getattr(gold, 'message', gold)}")
    if not isinstance(pred, GraphIR):
        return {"node_f1": 0.0, "edge_f1": 0.0, "exact": 0.0}
    nodes_p = {normalize_answer(x) for x in pred.nodes}
    nodes_g = {normalize_answer(x) for x in gold.nodes}
    node_f1 = multiset_f1(nodes_g, nodes_p)
    edges_p, edges_g = _edges(pred), _edges(gold)
    edge_f1 = multiset_f1(edges_g, edges_p)
    exact = float(nodes_p == nodes_g and sorted(edges_p) == sorted(edges_g) and pred.directed == gold.directed)
    return {"node_f1": node_f1, "edge_f1": edge_f1, "exact": exact}


def _numbers_equal(a: str, b: Any) -> bool:
    try:
        x, y = float(str(a).replace(",", "")), float(str(b).replace(",", ""))
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def grain_correct(pred: str | None, gold: Any, answer_type: str | None = None) -> bool:
    """GRAIN's correctness: the answer matches normalised (sets as sets) or as equal numbers.

    >>> grain_correct("16.0", "16"), grain_correct(None, "16")
    (True, False)
    """
    return pred is not None and (exact_match(pred, gold, answer_type) == 1.0 or _numbers_equal(pred, gold))


def grain_reward(completions: Sequence[Any], answer: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """GRAIN: ``0.5·correct + 0.4·structure + 0.1·format`` (see the module docstring).

    >>> gold = {"problem_type": "shortest_path", "graph": {"data": {"A": {"B": 2}, "B": {"C": 3}},
    ...         "directed": False, "weighted": True}, "parameters": {"source": "A", "target": "C"}}
    >>> call = "<graph>" + json.dumps(gold) + "</graph>"
    >>> grain_reward([call + "<answer>5</answer>", call + "<answer>6</answer>", "<answer>5</answer>"],
    ...              answer=["5"] * 3, gold_ir=[gold] * 3)
    [1.0, 0.5, 0.5]
    """
    from components.tools.graph_ir import GraphIR

    n = len(completions)
    gold = _column({"answer": answer}, "answer", n)
    irs = _column(kwargs, "gold_ir", n)
    types = _column(kwargs, "answer_type", n)
    out: list[float | None] = []
    preds = predictions(completions, kwargs)
    for comp, pred, g, gir, t in zip(completions, preds, gold, irs, types, strict=True):
        if g is None or gir is None:
            out.append(None)
            continue
        blocks = _GRAPH_BLOCK.findall(completion_text(comp))
        pred_ir = _ir(blocks[-1]) if blocks else None
        scores = graph_structure_scores(pred_ir, gir)
        structure = (scores["node_f1"] + scores["edge_f1"] + scores["exact"]) / 3.0
        correct = float(grain_correct(pred, g, t))
        fmt = float(isinstance(pred_ir, GraphIR) and pred is not None)
        out.append(0.5 * correct + 0.4 * structure + 0.1 * fmt)
    return out


REWARDS: Final[dict[str, Reward]] = {
    "graphcert": graphcert_reward,
    "graphdancer": graphdancer_reward,
    "grain": grain_reward,
}


def get_reward(name: str) -> Reward:
    """The reward registered as ``name``; a clear error for an unknown one."""
    try:
        return REWARDS[name]
    except KeyError:
        raise KeyError(f"unknown reward {name!r}; registered: {sorted(REWARDS)}") from None
