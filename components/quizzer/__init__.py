"""The Quizzer (GraphCert): question/answer/evidence candidates from a property graph.

* :mod:`~components.quizzer.axes` — the five generation axes and their allowed-combination tables;
* :mod:`~components.quizzer.candidate` — :class:`QACandidate`, the record of one candidate;
* :mod:`~components.quizzer.template` — :class:`TemplateQuizzer`, schema-driven Cypher templates
  run through the sandbox (the CPU demo's main source);
* :mod:`~components.quizzer.llm_quizzer` — :class:`LLMQuizzer`, a model exploring through the
  sandbox with one repair pass;
* :mod:`~components.quizzer.final` — running and checking final programs, parsing answers.

``QUIZZERS`` maps the quizzer kind (``"template"``, ``"llm"``) to its class.
"""

from __future__ import annotations

from typing import Any

from components.quizzer.axes import Axes, AxesError, allowed_returns, sample_axes
from components.quizzer.candidate import FAILURE_REASONS, QACandidate, candidate_id
from components.quizzer.llm_quizzer import LLMQuizzer, LLMQuizzerConfig
from components.quizzer.template import TEMPLATES, TemplateQuizzer

__all__ = [
    "FAILURE_REASONS",
    "QUIZZERS",
    "TEMPLATES",
    "Axes",
    "AxesError",
    "LLMQuizzer",
    "LLMQuizzerConfig",
    "QACandidate",
    "TemplateQuizzer",
    "allowed_returns",
    "candidate_id",
    "sample_axes",
]

QUIZZERS: dict[str, Any] = {"template": TemplateQuizzer, "llm": LLMQuizzer}
