"""The built report is cached per data version: an unchanged pool is served without recomputing, and every kind of
change (annotation, adjudication, import, job progress) gives a new version and a rebuilt report."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from analysis import services
from analysis.report.build import report_data_version
from analysis.services import report_build, report_build_uncached
from annotation.services import adjudication_save, generations_import
from generation.jobs.progress import job_progress_refresh
from tests.analysis.factories import study_build
from tests.factories import AnnotationFactory, GenerationFactory, InstanceFactory, ProbResultFactory

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


@pytest.fixture
def study(annotator, second_annotator):
    return study_build(ana=annotator, bo=second_annotator)


@pytest.fixture
def builds(monkeypatch):
    """Counts the expensive builds (`report_data`) that `report_build` makes."""
    calls = []
    real = services.report_data

    def counting(**kwargs):
        calls.append(kwargs["pool"].name)
        return real(**kwargs)

    monkeypatch.setattr(services, "report_data", counting)
    return calls


class TestWarmReport:
    def test_an_unchanged_pool_is_built_once(self, study, builds):
        first = report_build(pool=study)
        assert report_build(pool=study) == first
        assert builds == ["study"]

    def test_the_cached_report_equals_a_fresh_build(self, study):
        report_build(pool=study)
        assert report_build(pool=study) == report_build_uncached(pool=study)

    def test_a_warm_report_costs_one_query(self, study, django_assert_max_num_queries):
        report_build(pool=study)
        with django_assert_max_num_queries(1):
            report_build(pool=study)

    def test_each_examples_seed_is_cached_on_its_own(self, study, builds):
        paper = report_build(pool=study)
        other = report_build(pool=study, examples_seed=7)
        assert other["examples_seed"] == 7 and paper["examples_seed"] != 7
        report_build(pool=study, examples_seed=7)
        assert builds == ["study", "study"]

    def test_changing_the_returned_report_leaves_the_cached_one_alone(self, study):
        report = report_build(pool=study)
        report["accuracy"].clear()
        assert report_build(pool=study)["accuracy"]

    def test_the_warm_page_does_not_rebuild_the_report(self, study, client, researcher, builds):
        client.force_login(researcher)
        url = reverse("report-detail", args=["study"])
        first = client.get(url)
        second = client.get(url)
        assert first.status_code == second.status_code == 200
        assert first.context["report"] == second.context["report"]
        assert first.context["plot_version"] == second.context["plot_version"]
        assert builds == ["study"]

    def test_the_api_and_the_page_share_the_cached_report(self, study, client, researcher, builds):
        client.force_login(researcher)
        client.get(reverse("report-detail", args=["study"]))
        response = client.get(reverse("api-report", args=["study"]), {"format": "json"})
        assert response.status_code == 200 and response.json()["pool"] == "study"
        assert builds == ["study"]


class TestNewVersion:
    def test_a_new_annotation_updates_the_report(self, study, annotator, builds):
        before = report_build(pool=study)
        item = study.items.filter(annotations__isnull=True).get()
        AnnotationFactory(item=item, annotator=annotator, label="misgendering")
        after = report_build(pool=study)
        assert after["n_annotated"] == before["n_annotated"] + 1
        assert builds == ["study", "study"]

    def test_an_edited_annotation_updates_the_report(self, study, annotator):
        before = report_build(pool=study)
        annotation = study.items.order_by("pk")[3].annotations.get(annotator=annotator)
        assert annotation.label == "no_pronoun"
        annotation.label = "correct"
        annotation.save()
        after = report_build(pool=study)
        assert after["label_distribution"] != before["label_distribution"]
        assert after == report_build_uncached(pool=study)

    def test_a_deleted_annotation_updates_the_report(self, study, annotator):
        before = report_build(pool=study)
        study.items.order_by("pk")[3].annotations.get(annotator=annotator).delete()
        assert report_build(pool=study)["n_annotated"] == before["n_annotated"] - 1

    def test_a_new_adjudication_updates_the_report(self, study):
        before = report_build(pool=study)
        third = study.items.order_by("pk")[2]
        adjudication_save(item=third, label="correct", extraneous=False)
        after = report_build(pool=study)
        assert after != before
        assert after == report_build_uncached(pool=study)

    def test_an_import_updates_the_report(self, study):
        before = report_build(pool=study)
        result = generations_import(paths=[DEMO_DIR / "generations_pre.csv"], pool_name="study")
        assert result.items > 0
        assert report_build(pool=study)["n_items"] == before["n_items"] + result.items

    def test_job_progress_updates_the_report(self, study):
        job = study.jobs.get()
        job_progress_refresh(job_id=job.pk)
        before = report_build(pool=study)
        instance = InstanceFactory(pronoun="xe")
        ProbResultFactory(job=job, instance=instance, correct=True, prediction="xe")
        for index in range(5):
            GenerationFactory(job=job, instance=instance, setting="pre", sample_index=index, heuristic_correct=True)
        job_progress_refresh(job_id=job.pk)
        after = report_build(pool=study)
        assert after["prob_vs_gen"] != before["prob_vs_gen"]
        assert after == report_build_uncached(pool=study)

    def test_the_version_does_not_change_without_a_change(self, study):
        assert report_data_version(pool=study) == report_data_version(pool=study)
