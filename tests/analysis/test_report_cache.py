"""The built report is cached under the pool's change stamp: an unchanged pool is served without recomputing, every
write path that changes what the report reads (annotations, label imports, adjudications, item imports, judge labels,
jobs' progress, the pool's settings, assignments) bumps the stamp and gives a rebuilt report, and reads bump
nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from analysis import services
from analysis.services import quality_dashboard_cached, report_build, report_build_uncached, report_data_version
from annotation.models import Assignment, Pool
from annotation.services import adjudication_save, generations_import
from annotation.services.annotation import annotation_submit
from annotation.services.assignment import assignments_create
from annotation.services.guidelines import pool_guidelines_set
from annotation.services.label_files import Upload
from annotation.services.label_import import labels_import
from annotation.services.pool import pool_create
from annotation.services.qualification import pool_pass_mark_set
from annotation.services.stamp import pool_changed, pool_stamp
from generation.jobs.progress import job_fail, job_progress_refresh, job_requeue
from generation.jobs.services import job_cancel
from generation.models import JobStatus
from judging.services.imports import judge_labels_import
from tests.analysis.factories import study_build
from tests.factories import GenerationFactory, InstanceFactory, ProbResultFactory

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"


@pytest.fixture
def study(module_study):
    """The hand-built study, built once for the module (tests/analysis/conftest.py)."""
    return module_study


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


def _assigned(pool, user, item) -> str:
    """The item, assigned to `user` (an assignment row is no change a report reads)."""
    Assignment.objects.get_or_create(pool=pool, item=item, annotator=user, defaults={"position": 99})
    return item.public_id


class TestNewVersion:
    def test_a_new_annotation_updates_the_report(self, study, annotator, builds):
        before = report_build(pool=study)
        item = study.items.filter(annotations__isnull=True).get()
        annotation_submit(user=annotator, public_id=_assigned(study, annotator, item), label="misgendering")
        after = report_build(pool=study)
        assert after["n_annotated"] == before["n_annotated"] + 1
        assert builds == ["study", "study"]

    def test_an_edited_annotation_updates_the_report(self, study, annotator):
        before = report_build(pool=study)
        item = study.items.order_by("pk")[3]
        assert item.annotations.get(annotator=annotator).label == "no_pronoun"
        annotation_submit(user=annotator, public_id=_assigned(study, annotator, item), label="correct")
        after = report_build(pool=study)
        assert after["label_distribution"] != before["label_distribution"]
        assert after == report_build_uncached(pool=study)

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

    def test_imported_labels_update_the_report(self, study):
        before = report_build(pool=study)
        item = study.items.filter(annotations__isnull=True).get()
        labels_import(source=Upload("people.csv", f"item,annotator,label\n{item.public_id},cy,correct\n".encode()),
                      pool_name="study")  # fmt: skip
        assert report_build(pool=study)["n_annotated"] == before["n_annotated"] + 1

    def test_imported_judge_labels_update_the_report(self, study):
        before = report_data_version(pool=study)
        rows = "".join(f"{item.public_id},correct\n" for item in study.items.all())
        judge_labels_import(source=Upload("judge.csv", f"item,label\n{rows}".encode()), pool_name="study", judge="j")
        assert report_data_version(pool=study) != before
        assert report_build(pool=study) == report_build_uncached(pool=study)

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

    @pytest.mark.parametrize("change", ["fail", "requeue", "cancel"])
    def test_a_jobs_state_changes_the_version(self, study, change):
        job = study.jobs.get()
        job.status = JobStatus.RUNNING
        job.save(update_fields=["status"])
        before = report_data_version(pool=study)
        if change == "fail":
            job_fail(job_id=job.pk, error="the engine stopped")
        elif change == "requeue":
            job_requeue(job=job)
        else:
            job_cancel(job=job)
        assert report_data_version(pool=study) != before

    def test_the_pass_mark_changes_the_version(self, study):
        before = report_data_version(pool=study)
        pool_pass_mark_set(pool=study, pass_mark=0.5)
        assert report_data_version(pool=study) != before

    def test_new_guidelines_change_the_version(self, study):
        before = report_data_version(pool=study)
        pool_guidelines_set(pool=study, text="Label the pronoun the text uses for the person named.")
        assert report_data_version(pool=study) != before

    def test_new_assignments_change_the_version(self, study, annotator, second_annotator):
        before = report_data_version(pool=study)
        assignments_create(pool=study, usernames=[annotator.username, second_annotator.username], overlap=0, seed=1)
        assert report_data_version(pool=study) != before

    def test_the_stamp_is_the_pools_own(self, study, annotator, second_annotator):
        other = study_build(ana=annotator, bo=second_annotator, name="other")
        before = report_data_version(pool=other)
        adjudication_save(item=study.items.order_by("pk")[2], label="correct", extraneous=False)
        assert report_data_version(pool=other) == before

    def test_a_write_that_rolls_back_takes_its_bump_back(self, study):
        from django.db import transaction

        before = pool_stamp(pool=study)
        with pytest.raises(RuntimeError), transaction.atomic():
            pool_changed(pools=[study])
            raise RuntimeError("refused")
        assert pool_stamp(pool=study) == before


class TestReadsKeepTheVersion:
    def test_the_version_does_not_change_without_a_change(self, study):
        assert report_data_version(pool=study) == report_data_version(pool=study)

    def test_building_and_reading_change_nothing(self, study, client, researcher):
        pool_changed(pools=[study])
        before = report_data_version(pool=study)
        report_build(pool=study)
        report_build(pool=study, examples_seed=7)
        quality_dashboard_cached(pool=study)
        client.force_login(researcher)
        assert client.get(reverse("report-detail", args=["study"])).status_code == 200
        assert report_data_version(pool=study) == before

    def test_a_pool_never_changed_has_a_stamp_and_a_new_pool_its_own(self, study):
        fresh = Pool.objects.create(name="fresh")
        assert pool_stamp(pool=fresh) == "0"
        made = pool_create(name="made", labels=list(study.labels))
        assert pool_stamp(pool=made) not in {"0", pool_stamp(pool=study)}
