"""Panels of judges (docs/domain.md, "Judges a reviewer trusts": panel): the plurality label and mean
probabilities worked out here by hand, ties, refusals, the command, and the panel as a rater in the report."""

from __future__ import annotations

import json
import math
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from analysis.report.build import report_data
from judging.models import RUN_PANEL, JudgeRun, MachineLabel
from judging.panels import PanelError, panel_create, panel_members
from judging.services.judges import judge_add
from judging.services.runs import imported_run_record
from tests.judging.conftest import finished_run

pytestmark = pytest.mark.django_db


def _softmax(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values())
    weights = {label: math.exp(value - top) for label, value in scores.items()}
    total = sum(weights.values())
    return {label: weight / total for label, weight in weights.items()}


@pytest.fixture
def members(smollm2, judged_pool):
    """Three runs over the judged pool: two likelihood judges and an imported one without probabilities."""
    pool, items = judged_pool
    first = judge_add(name="alpha", model=smollm2)[0]
    second = judge_add(name="beta", model=smollm2)[0]
    a = {"correct": -1.0, "misgendering": -2.0, "no_pronoun": -3.0}
    b = {"correct": -2.5, "misgendering": -0.5, "no_pronoun": -3.0}
    run_a = finished_run(judge=first, pool=pool, labels={item: ("correct", 0.7, a) for item in items})
    run_b = finished_run(
        judge=second, pool=pool,
        labels={item: ("misgendering", 0.8, b) if index < 3 else ("correct", 0.6, a) for index, item in enumerate(items)},
    )  # fmt: skip
    from judging.services.imports import external_judge

    outside = external_judge(name="gamma", labels=list(pool.labels), model_id="gpt-4o")[0]
    run_c = imported_run_record(judge=outside, pool=pool, count=len(items), source_file="gamma.csv")
    for index, item in enumerate(items):
        MachineLabel.objects.create(
            run=run_c, item=item, label="no_pronoun" if index in (0, 1) else "misgendering", scores={}, prompt=""
        )
    return pool, items, (run_a, run_b, run_c), (a, b)


def test_it_labels_each_item_with_the_plurality_and_the_mean_probabilities(members):
    pool, items, runs, (a, b) = members
    run, ties = panel_create(name="jury", runs=[r.pk for r in runs])
    assert run.origin == RUN_PANEL and run.judge.name == "jury" and run.pool_id == pool.pk
    assert [m.pk for m in panel_members(run=run)] == [r.pk for r in runs]
    labels = {label.item_id: label for label in MachineLabel.objects.filter(run=run)}
    # items 0-1: correct / misgendering / no_pronoun: a three-way tie; item 2: correct, misgendering, misgendering;
    # items 3-4: correct, correct, misgendering
    expected_labels = ["", "", "misgendering", "correct", "correct"]
    assert [labels[item.pk].label for item in items] == expected_labels and ties == 2
    pa, pb = _softmax(a), _softmax(b)
    for index, item in enumerate(items):
        second = pb if index < 3 else pa
        third = {label: float(label == ("no_pronoun" if index < 2 else "misgendering")) for label in a}
        mean = {label: (pa[label] + second[label] + third[label]) / 3 for label in a}
        assert labels[item.pk].scores == pytest.approx(mean)
        chosen = expected_labels[index]
        assert labels[item.pk].confidence == pytest.approx(mean[chosen] if chosen else 0.0)


def test_the_panel_is_a_rater_of_the_report_under_its_name(members):
    pool, items, runs, _ = members
    panel_create(name="jury", runs=[r.pk for r in runs])
    run = JudgeRun.objects.get(origin=RUN_PANEL)
    report = report_data(pool=pool)
    assert {row["judge"]: row["run"] for row in report["judge_verdict"]}["jury"] == run.pk
    from annotation.machine import machine_labels

    shown = machine_labels(pool=pool, item_ids=[items[3].pk])[items[3].pk]
    assert ("judge:jury", "correct") in {(label.origin, label.label) for label in shown}


def test_it_refuses_runs_over_different_items_and_says_which(members, judge):
    pool, items, runs, (a, _) = members
    fewer = finished_run(judge=judge, pool=pool, labels={items[0]: ("correct", 0.9, a)})
    with pytest.raises(PanelError) as caught:
        panel_create(name="jury", runs=[runs[0].pk, fewer.pk])
    assert f"run {fewer.pk} labels 1 items, run {runs[0].pk} 5" in str(caught.value)
    with pytest.raises(PanelError) as caught:
        panel_create(name="alpha", runs=[runs[0].pk])
    message = str(caught.value)
    assert "'alpha' is a judge's name" in message and "at least two judge runs" in message
    assert not JudgeRun.objects.filter(origin=RUN_PANEL).exists()


def test_the_command_prints_the_panel_run_last(members):
    _, _, runs, _ = members
    out = StringIO()
    call_command("judge_panel", "--name", "jury", "--runs", ",".join(str(r.pk) for r in runs), "--json", stdout=out)
    lines = out.getvalue().strip().splitlines()
    summary = json.loads(lines[-1])
    assert len(lines) == 1 and summary["n_ties"] == 2 and summary["labels"] == 5
    assert summary["members"] == [r.pk for r in runs] and JudgeRun.objects.get(pk=summary["run"]).judge.name == "jury"
    with pytest.raises(CommandError, match="no judge run 99999"):
        call_command("judge_panel", "--name", "jury2", "--runs", f"{runs[0].pk},99999", stdout=StringIO())


def test_the_pool_page_offers_the_panel_form_and_makes_the_panel(members, researcher, client):
    pool, _, runs, _ = members
    client.force_login(researcher)
    page = client.get(f"/pools/{pool.name}/").content.decode()
    assert f'action="/pools/{pool.name}/panel/"' in page and f'value="{runs[2].pk}"' in page
    response = client.post(f"/pools/{pool.name}/panel/", {"name": "jury", "runs": [str(r.pk) for r in runs]})
    assert response.status_code == 302 and JudgeRun.objects.get(origin=RUN_PANEL).judge.name == "jury"
    refused = client.post(f"/pools/{pool.name}/panel/", {"name": "jury2", "runs": [str(runs[0].pk)]}, follow=True)
    assert "a panel needs at least two judge runs" in refused.content.decode()


def test_a_pool_with_a_panel_can_be_deleted_but_a_member_run_alone_cannot(members):
    from django.db.models import RestrictedError

    pool, _, runs, _ = members
    panel_create(name="jury", runs=[r.pk for r in runs])
    with pytest.raises(RestrictedError):
        runs[0].delete()
    pool.delete()
    assert not JudgeRun.objects.exists()


def test_a_panel_of_runs_over_a_job_has_prediction_powered_and_corrected_rates(verdict_study, smollm2):
    from django.utils import timezone

    from generation.models import Job, JobChunk
    from judging.services.runs import judge_run_create

    study = verdict_study
    other = judge_add(name="other", model=smollm2)[0]
    second, _ = judge_run_create(job=study.job.pk, judge=other.name, rerun=True, queue=False)
    flat = {"correct": -1.0, "misgendering": -1.5, "no_pronoun": -3.0}
    MachineLabel.objects.bulk_create(
        [
            MachineLabel(run=second, generation=g, label="correct", confidence=0.55, scores=flat, prompt="")
            for g in study.generations
        ]
    )
    JobChunk.objects.filter(job_id=second.job_id).update(finished_at=timezone.now())
    Job.objects.filter(pk=second.job_id).update(status="done", finished_at=timezone.now())
    run, _ = panel_create(name="jury", runs=[study.run.pk, second.pk])
    assert run.source_job_id == study.job.pk and run.labels.count() == len(study.generations)
    report = report_data(pool=study.pool)
    assert {r["judge"] for r in report["prediction_powered"]} == {"smol-judge", "other", "jury"}
    assert {r["judge"] for r in report["rates_corrected"]} == {"smol-judge", "other", "jury"}
    # two members: a label agreed on is the panel's, a disagreement is a tie
    mine = {label.generation_id: label.label for label in MachineLabel.objects.filter(run=study.run)}
    panel = {label.generation_id: label.label for label in MachineLabel.objects.filter(run=run)}
    assert all(panel[g] == ("correct" if mine[g] == "correct" else "") for g in mine)
