"""The report's `distractors` section and its plot: per model x setting x distractor count, against a hand-worked
table and scipy's SEM."""

from __future__ import annotations

import pytest
from scipy import stats

from analysis.plots import plot_figures, plot_render
from analysis.report.build import report_data
from annotation.models import Referent
from tests.factories import (
    AnnotationFactory,
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
    TemplateFactory,
)

# (distractors, human label, probability correct, continuation, referent of each pronoun in order)
ITEMS = [
    (1, "correct", True, " xe left early.", ["target"]),
    (1, "misgendering", True, " she left early.", ["target"]),
    (1, "correct", False, " she waved at xem.", ["other", "target"]),
    (3, "misgendering", False, " she left early.", ["target"]),
    (3, "correct", False, " she waved.", ["other"]),
    (3, "no_pronoun", True, " The nurse left.", []),
]


@pytest.fixture
def pool(annotator):
    dataset = DatasetFactory(name="ruff-distractors", kind="ruff")
    job = GenerationJobFactory(model=LanguageModelFactory(name="m"), dataset=dataset)
    template = TemplateFactory(
        dataset=dataset, text="The nurse said that $NOM_PRONOUN was late.", mask="$NOM_PRONOUN", form="nom"
    )
    pool = PoolFactory(name="d")
    for n, (count, label, prob, continuation, referents) in enumerate(ITEMS):
        instance = InstanceFactory(
            template=template, pronoun="xe", draw=n, name="", text="The nurse smiled. $NOM_PRONOUN was late.",
            distractors=count, other_person="patient", confuse_pronoun="she",
        )  # fmt: skip
        ProbResultFactory(job=job, instance=instance, prediction="xe" if prob else "he", correct=prob)
        generation = GenerationFactory(job=job, instance=instance, setting="pre", continuation=continuation)
        item = PoolItemFactory(
            pool=pool, generation=generation, model_name="m", dataset="ruff", setting="pre", pronoun="xe",
            continuation=continuation, heuristic_correct=generation.heuristic_correct,
        )  # fmt: skip
        annotation = AnnotationFactory(item=item, annotator=annotator, label=label)
        starts = [i for i, word in enumerate(continuation.split(" ")) if word.strip(".") in ("xe", "she", "xem")]
        offsets = []
        position = 0
        for word in continuation.split(" "):
            offsets.append(position)
            position += len(word) + 1
        for index, referent in zip(starts, referents, strict=True):
            word = continuation.split(" ")[index].strip(".")
            start = offsets[index]
            Referent.objects.create(
                annotation=annotation, start=start, end=start + len(word), word=word, referent=referent
            )
    return pool


@pytest.mark.django_db
def test_it_reports_accuracy_per_distractor_count(pool):
    rows = report_data(pool=pool)["distractors"]

    assert [(r["model"], r["setting"], r["distractors"], r["n"]) for r in rows] == [
        ("m", "pre", 1, 3),
        ("m", "pre", 3, 3),
    ]
    one, three = rows
    # Hand-worked: human binary is 0 only for misgendering; heuristic = the first pronoun is xe's (none: correct).
    human, prob, heuristic = [1, 0, 1], [1, 1, 0], [1, 0, 0]
    assert one["human_accuracy"] == pytest.approx(2 / 3)
    assert one["human_accuracy_sem"] == pytest.approx(stats.sem(human))
    assert one["probability_accuracy"] == pytest.approx(2 / 3)
    assert one["probability_accuracy_sem"] == pytest.approx(stats.sem(prob))
    assert one["heuristic_accuracy"] == pytest.approx(1 / 3)
    assert one["heuristic_accuracy_sem"] == pytest.approx(stats.sem(heuristic))
    assert one["human_vs_heuristic"] == pytest.approx(2 / 3)  # agree, agree, disagree
    assert one["heuristic_validity"] == "not valid with distractors"
    assert (one["first_pronoun_other_share"], one["first_pronoun_n"]) == (pytest.approx(1 / 3), 3)
    assert three["human_accuracy"] == pytest.approx(2 / 3) and three["probability_accuracy"] == pytest.approx(1 / 3)
    assert (three["first_pronoun_other_share"], three["first_pronoun_n"]) == (pytest.approx(1 / 2), 2)


@pytest.mark.django_db
def test_it_draws_the_accuracy_against_distractors(pool):
    report = report_data(pool=pool)

    assert "distractor_accuracy" in [figure["name"] for figure in plot_figures(report=report)]
    assert plot_render(name="distractor_accuracy", report=report, fmt="svg").startswith(b"<?xml")


@pytest.mark.django_db
def test_the_heuristic_of_distractor_instances_is_no_result_of_the_automatic_tables(pool):
    """The first pronoun may be the other person's: the heuristic of an instance with distractors shows only beside
    the human verdict (the `distractors` table), never as a result; an instance without distractors counts as ever."""
    job = pool.items.first().generation.job
    pool.jobs.set([job])
    template = pool.items.first().generation.instance.template
    plain = InstanceFactory(template=template, pronoun="xe", draw=99, name="", text="The nurse smiled.", distractors=0)
    ProbResultFactory(job=job, instance=plain, prediction="xe", correct=True)
    GenerationFactory(job=job, instance=plain, setting="pre", continuation=" xe left.")
    report = report_data(pool=pool)

    assert {row["distractors"] for row in report["distractors"]} == {1, 3}
    (accuracy,) = report["accuracy"]
    assert (accuracy["n"], accuracy["prob_n"], accuracy["gen_n"], accuracy["gen_first_n"]) == (1, 1, 1, 1)
    assert accuracy["human_n"] == len(ITEMS)  # people's labels of the distractor items stay: the human verdict
    (paired,) = report["prob_vs_gen"]
    assert paired["n"] == 1
    assert report["conflict_rate"] and all(row["instances"] == 1 for row in report["conflict_rate"])
