"""Natural questions: the meaning check on hand-written rewrites of real template questions, the
step on scripted model output (both texts stored, rejections counted), and the quiz run with a
real tiny model (its garbage is rejected, never stored as the question)."""

from __future__ import annotations

import pytest

from components.quizzer.paraphrase import PARAPHRASE_REASONS, check_paraphrase, paraphrase_candidates
from components.quizzer.template import TemplateQuizzer
from tests.doubles import ScriptedBackend

Q_SET = 'Which are the papers that the author "Seo-yeon Kumar" wrote?'
Q_RANK = 'Of the authors "Omar Silva", "Min Suzuki" and "Kwame Tanaka", which one has the most papers that it wrote?'
Q_BOOL = 'Does the venue "KDD" have more papers published in it than the venue "ICML"?'
Q_DIFF = 'Which of the papers that cite "A" are not among the papers that "B" cites?'
Q_PATH = 'Ignoring direction, are the author "Ann" and the venue "KDD" connected by a path of at most 3 hops?'

CASES = [
    (Q_SET, "set", 'Which papers did "Seo-yeon Kumar" write?', None),  # a set question still asks for several
    (Q_SET, "set", 'List all the papers written by "Seo-yeon Kumar"?', None),
    (Q_SET, "set", 'Which papers did "Seo-Yeon Kumar" write?', "entities"),
    (Q_SET, "set", "Which papers did Seo-yeon Kumar write?", "entities"),
    (Q_RANK, "entity", 'Who among "Omar Silva", "Min Suzuki" and "Kwame Tanaka" wrote the most papers?', None),
    (Q_RANK, "entity", 'Who among "Omar Silva", "Min Suzuki" and "Kwame Tanaka" wrote the fewest papers?', "modifiers"),
    (Q_RANK, "entity", 'Who among "Omar Silva", "Min Suzuki" and "Kwame Tanaka" wrote papers?', "modifiers"),
    (Q_BOOL, "boolean", 'Has "KDD" published more papers than "ICML"?', None),
    (Q_BOOL, "boolean", 'How many more papers has "KDD" published than "ICML"?', "scope"),
    (Q_BOOL, "boolean", 'Has "KDD" published fewer papers than "ICML"?', "modifiers"),
    (Q_PATH, "boolean", 'Are "Ann" and "KDD" linked, in either direction, by a path of at most 3 hops?', None),
    (Q_PATH, "boolean", 'Are "Ann" and "KDD" linked, in either direction, by a path of at most 4 hops?', "numbers"),
    (Q_PATH, "boolean", 'Are "Ann" and "KDD" linked in either direction by at least 3 hops?', "modifiers"),
    (Q_SET, "set", 'Which papers did "Seo-yeon Kumar" not write?', "modifiers"),  # a negation added
    (Q_SET, "set", 'Which papers didn\'t "Seo-yeon Kumar" write?', "modifiers"),
    (Q_SET, "set", 'What are the most recent papers "Seo-yeon Kumar" wrote?', "modifiers"),  # a superlative added
    (Q_DIFF, "set", 'Which papers cite "A" but aren\'t cited by "B"?', None),  # the negation kept, in another form
    (Q_DIFF, "set", 'Which papers cite "A" and are cited by "B"?', "modifiers"),  # the negation dropped
    (Q_SET, "set", Q_SET, "unchanged"),
    (Q_SET, "set", "", "empty"),
    (Q_SET, "set", 'Sure! Here it is:\nWhich papers did "Seo-yeon Kumar" write?', "form"),
]  # fmt: skip


@pytest.mark.parametrize(("original", "answer_type", "rewrite", "reason"), CASES)
def test_the_check_keeps_meaning_and_refuses_changes(original, answer_type, rewrite, reason) -> None:
    assert check_paraphrase(original, rewrite, answer_type) == reason
    assert reason is None or reason in PARAPHRASE_REASONS


def test_the_step_stores_both_texts_and_counts_rejections(demo_paths) -> None:
    qp, schema = demo_paths["academic"]
    cands = [c for c in TemplateQuizzer(qp, schema, seed=0).generate(6) if c.ok][:3]
    originals = [c.question for c in cands]
    first = cands[0].question
    good = first.replace("Which are the", "Which").replace("What is the", "Tell me the")
    good = good if good != first else "Please, " + first[0].lower() + first[1:]
    replies = [good, "I cannot help with that.", originals[2].replace('"', "")]
    report = paraphrase_candidates(cands, ScriptedBackend(replies))
    assert report["asked"] == 3
    assert cands[0].meta["paraphrase"] == {"status": "accepted"} and cands[0].question == good
    assert [c.meta["template_question"] for c in cands] == originals
    statuses = [c.meta["paraphrase"]["status"] for c in cands]
    accepted = statuses.count("accepted")
    assert report["accepted"] == accepted and sum(report["rejected"].values()) == 3 - accepted
    assert cands[1].meta["paraphrase"] == {"status": "rejected", "reason": "form", "text": "I cannot help with that."}
    assert cands[1].question == originals[1]  # a rejected rewrite never becomes the question
    assert cands[2].meta["paraphrase"]["reason"] == "entities" and cands[2].question == originals[2]


def test_a_quiz_run_with_paraphrase_on_a_real_tiny_model(tmp_path) -> None:
    from components.graph.load import load_graph
    from components.graph.sources import demo
    from components.llm.models import tiny_random_model
    from components.quizzer.run import QuizConfig, run_quiz

    tiny_model = tiny_random_model(tmp_path / "tiny", seed=0)
    load_graph(demo.generate("academic", seed=0, scale=200), tmp_path / "db")
    config = QuizConfig(template_n=4, llm_n=0, paraphrase=True, model=str(tiny_model))
    run = run_quiz(str(tmp_path / "db"), config)
    template = [c for c in run.candidates if c.ok]
    assert run.paraphrase["asked"] == len(template) > 0
    assert run.paraphrase["accepted"] + sum(run.paraphrase["rejected"].values()) == len(template)
    for c in template:
        assert c.meta["template_question"]
        if c.meta["paraphrase"]["status"] == "rejected":
            assert c.question == c.meta["template_question"]
    assert "paraphrase" in run.wall_s
