"""Rates of an interval pool with a positive threshold (docs/domain.md, "Scales"): the verdict study
(tests/judging/verdict_study.py) relabelled correct -> 1, no_pronoun -> 2, misgendering -> 3 with
`positive_at_least` 2. An item is positive when its human value (the adjudicated label's, else the mean of its
annotations) is at least 2, the judge's Yhat is its probability of 2 or 3. Every rates table (prediction-powered,
bias-corrected, stratified PPI, the budget planner, the active estimate) is checked against its metric function fed
with vectors worked out here from the study's records; before the threshold reached them they were empty."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.core.management import call_command

from analysis.metrics.active import active_mean, stratified_ppi
from analysis.metrics.rates import corrected_rate
from analysis.metrics.verdict import ppi_mean
from analysis.report.build import report_data
from annotation.models import INTERVAL, Adjudication, Annotation, Pool, PoolItem
from judging.models import Judge, MachineLabel
from tests.factories import AnnotationFactory

VALUE = {"correct": "1", "no_pronoun": "2", "misgendering": "3"}
THRESHOLD = 2.0


def _relabel(*pools: Pool) -> None:
    """Every label of the study written as its number, the judge's options and scores too."""
    for old, new in VALUE.items():
        Annotation.objects.filter(label=old).update(label=new)
        Adjudication.objects.filter(label=old).update(label=new)
        MachineLabel.objects.filter(label=old).update(label=new)
    for row in MachineLabel.objects.all():
        row.scores = {VALUE[label]: score for label, score in row.scores.items()}
        row.save(update_fields=["scores"])
    for judge in Judge.objects.all():
        judge.options = [[VALUE[label], text] for label, text in judge.options]
        judge.save(update_fields=["options"])
    for pool in pools:
        pool.labels, pool.scale, pool.positive_at_least = ["1", "2", "3"], INTERVAL, "2"
        pool.save(update_fields=["labels", "scale", "positive_at_least"])


def _yhat(study, generation_id: int) -> float:
    """The judge's softmax probability of a label at or above the threshold (no_pronoun or misgendering)."""
    scores = study.scores[generation_id]
    weights = {label: math.exp(score - max(scores.values())) for label, score in scores.items()}
    return (weights["no_pronoun"] + weights["misgendering"]) / sum(weights.values())


def _human(pool: Pool) -> dict[int, float]:
    """generation id -> 1.0 / 0.0: the item's adjudicated value, else the mean of its annotations, at least 2."""
    out = {}
    for item in PoolItem.objects.filter(pool=pool):
        adjudicated = Adjudication.objects.filter(item=item).first()
        given = [float(label) for label in Annotation.objects.filter(item=item).values_list("label", flat=True)]
        if adjudicated is not None:
            out[item.generation_id] = float(float(adjudicated.label) >= THRESHOLD)
        elif given:
            out[item.generation_id] = float(np.mean(given) >= THRESHOLD)
    return out


def _contexts(study) -> dict[tuple[int, str], list[int]]:
    by_context: dict[tuple[int, str], list[int]] = {}
    for generation in study.generations:
        by_context.setdefault((generation.instance_id, generation.setting), []).append(generation.pk)
    return by_context


def _vectors(study, human: dict[int, float], pronoun: str | None = None):
    """PPI's Y and Yhat of the labelled contexts and Yhat of the others (of one pronoun, or all)."""
    pronoun_of = {g.pk: g.instance.pronoun for g in study.generations}
    y, yhat, unlabelled = [], [], []
    for generations in _contexts(study).values():
        if pronoun is not None and pronoun_of[generations[0]] != pronoun:
            continue
        labelled = [g for g in generations if g in human]
        if labelled:
            y.append(np.mean([human[g] for g in labelled]))
            yhat.append(np.mean([_yhat(study, g) for g in labelled]))
        else:
            unlabelled.append(np.mean([_yhat(study, g) for g in generations]))
    return y, yhat, unlabelled


def test_a_threshold_fills_every_rates_table_of_a_uniform_pool(verdict_study):
    _relabel(verdict_study.pool)
    report = report_data(pool=Pool.objects.get(pk=verdict_study.pool.pk))
    assert report["rates_note"] is None
    human = _human(verdict_study.pool)
    # the mean, not the median: an item with two 1s and two 3s (mean 2) would be negative by its lower median
    assert 0 < np.mean(list(human.values())) < 1

    ppi = {row["pronoun"]: row for row in report["prediction_powered"]}
    assert set(ppi) == {"xe", "he", "all"}
    for pronoun in ("xe", "he", "all"):
        y, yhat, unlabelled = _vectors(verdict_study, human, None if pronoun == "all" else pronoun)
        expected = ppi_mean(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
        assert ppi[pronoun]["ppi_rate"] == pytest.approx(expected["ppi_rate"])
        assert ppi[pronoun]["ppi_ci"] == pytest.approx(expected["ppi_ci"])
        assert ppi[pronoun]["human_rate"] == pytest.approx(np.mean(y))
        assert (ppi[pronoun]["n"], ppi[pronoun]["N"]) == (len(y), len(unlabelled))

    (stratified,) = report["stratified_ppi"]
    expected = stratified_ppi([(p, *_vectors(verdict_study, human, p)) for p in ("xe", "he")])
    assert stratified["rate"] == pytest.approx(expected["rate"])
    assert stratified["ci"] == pytest.approx(expected["ci"])

    assert report["label_budget"] and {row["pilot_n"] for row in report["label_budget"]} == {ppi["all"]["n"]}

    corrected = {row["pronoun"]: row for row in report["rates_corrected"]}
    label_of = dict(MachineLabel.objects.filter(run=verdict_study.run).values_list("generation_id", "label"))
    labelled, unlabelled_samples = [], []
    for generations in _contexts(verdict_study).values():
        known = [g for g in generations if g in human]
        if known:
            labelled.append(([int(human[g]) for g in known], [int(float(label_of[g]) >= THRESHOLD) for g in known]))
        else:
            unlabelled_samples.append([int(float(label_of[g]) >= THRESHOLD) for g in generations])
    expected = corrected_rate(labelled=labelled, unlabelled=unlabelled_samples)
    for key in ("se", "sp", "q", "rate", "n_labelled", "N"):
        assert corrected["all"][key] == pytest.approx(expected[key])


def test_a_threshold_reaches_an_active_pools_rates(verdict_study):
    call_command(
        "sample_pool", "--name", "active", "--jobs", str(verdict_study.job.pk), "--active", "--judge-run",
        str(verdict_study.run.pk), "--budget", "12", "--seed", "5",
    )  # fmt: skip
    active = Pool.objects.get(name="active")
    from django.contrib.auth import get_user_model

    people = get_user_model().objects.filter(username__in=["vera", "wim"]).order_by("username")
    drawn = list(PoolItem.objects.filter(pool=active).order_by("id"))
    for n, item in enumerate(drawn):  # vera the truth, wim the truth on every other item, else correct
        truth = verdict_study.truth[item.generation_id]
        AnnotationFactory(item=item, annotator=people[0], label=truth)
        AnnotationFactory(item=item, annotator=people[1], label=truth if n % 2 else "correct")
    pi = {item.generation_id: float(item.inclusion_probability) for item in drawn}
    _relabel(verdict_study.pool, active)
    report = report_data(pool=Pool.objects.get(pk=active.pk))
    human = _human(active)
    rows = {row["pronoun"]: row for row in report["active_rates"]}
    assert set(rows) == {"xe", "he", "all"}
    yhat, y, was_drawn, weights = [], [], [], []
    for generations in _contexts(verdict_study).values():
        yhat.append(np.mean([_yhat(verdict_study, g) for g in generations]))
        labelled = [g for g in generations if g in human]
        y.append(np.mean([human[g] for g in labelled]) if labelled else math.nan)
        was_drawn.append(generations[0] in pi)
        weights.append(pi.get(generations[0], 1.0))
    expected = active_mean(yhat=yhat, y=y, drawn=was_drawn, pi=weights)
    assert rows["all"]["rate"] == pytest.approx(expected["rate"])
    assert rows["all"]["ci"] == pytest.approx(expected["ci"])
    assert rows["all"]["human_rate"] == pytest.approx(expected["human_rate"])
    inclusion = {round(row["yhat"], 12) for row in report["active_inclusion"]}
    assert inclusion == {round(v, 12) for v, d in zip(yhat, was_drawn, strict=True) if d}
