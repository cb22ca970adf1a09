"""The admin: a saved edit of a judge adds a version; adding a run queues it as a job."""

from __future__ import annotations

import pytest

from judging.models import Judge, JudgeRun
from judging.prompts import DEFAULT_TEMPLATE

pytestmark = pytest.mark.django_db


def test_saving_an_edited_judge_adds_a_version(client, admin_user, judge):
    client.force_login(admin_user)
    form = {
        "name": judge.name,
        "model": judge.model_id,
        "mode": "likelihood",
        "template": DEFAULT_TEMPLATE.replace("Answer:", "Label:"),
        "options": '[["correct", " correct"], ["misgendering", " misgendering"], ["no_pronoun", " no pronoun"]]',
    }
    response = client.post(f"/admin/judging/judge/{judge.pk}/change/", form)
    assert response.status_code == 302
    assert list(Judge.objects.filter(name=judge.name).values_list("version", flat=True)) == [2, 1]
    judge.refresh_from_db()
    assert judge.template == DEFAULT_TEMPLATE


def test_a_template_without_its_fields_is_refused_in_the_admin(client, admin_user, judge):
    client.force_login(admin_user)
    form = {"name": "x", "model": judge.model_id, "mode": "likelihood", "template": "{context}", "options": "[]"}
    response = client.post("/admin/judging/judge/add/", form)
    assert response.status_code == 200 and not Judge.objects.filter(name="x").exists()


def test_adding_a_run_in_the_admin_queues_a_judge_job(client, admin_user, judge, judged_pool, monkeypatch):
    monkeypatch.setattr("generation.jobs.services.job_dispatch", lambda **kwargs: None)
    pool, _ = judged_pool
    client.force_login(admin_user)
    form = {"judge": judge.pk, "pool": pool.pk, "mode": "sampling", "k": 3, "temperature": 0.5, "seed": 4}
    response = client.post("/admin/judging/judgerun/add/", form)
    assert response.status_code == 302
    run = JudgeRun.objects.get()
    assert (run.job.kind, run.job.options, run.k, run.temperature, run.seed) == ("judge", {}, 3, 0.5, 4)
    bad = {**form, "k": 0}
    assert client.post("/admin/judging/judgerun/add/", bad).status_code == 200
    assert JudgeRun.objects.count() == 1


def test_the_jobs_pages_show_a_judge_run(client, researcher, judge, judged_pool):
    from judging.services.runs import judge_run_create

    pool, _ = judged_pool
    run, _ = judge_run_create(pool=pool.name, judge=judge.name, queue=False)
    client.force_login(researcher)
    listing = client.get("/generation/jobs/")
    detail = client.get(f"/generation/jobs/{run.job_id}/")
    assert listing.status_code == detail.status_code == 200
    assert f"judge {judge.name} v1 (likelihood) on pool {pool.name}" in detail.content.decode()
