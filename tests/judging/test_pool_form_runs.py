"""The pool form's active draw offers the finished judge runs over jobs by name, in a list, and keeps what was chosen
when the draw is refused."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from annotation.models import Pool
from generation.models import Job, JobStatus
from judging.models import MachineLabel
from judging.services.runs import judge_run_create
from tests.factories import GenerationFactory, GenerationJobFactory, InstanceFactory


def _job_with_texts(model):
    job = GenerationJobFactory(model=model, pronouns=["he", "she"], settings=["pre"], samples=1)
    for pronoun in ("he", "she"):
        GenerationFactory(job=job, instance=InstanceFactory(pronoun=pronoun), sample_index=0)
    return job


@pytest.fixture
def judged_jobs(judge, smollm2):
    """Two jobs: one judged by a finished run, one by a run still queued."""
    done_job, queued_job = _job_with_texts(smollm2), _job_with_texts(smollm2)
    done, _ = judge_run_create(job=done_job.pk, judge=judge.name, queue=False)
    for generation in done_job.generations.all():
        scores = {label: -2.0 for label in judge.option_map} | {"misgendering": -1.0}
        MachineLabel.objects.create(
            run=done, generation=generation, label="misgendering", confidence=0.5, scores=scores, prompt="p"
        )
    Job.objects.filter(pk=done.job_id).update(status=JobStatus.DONE, finished_at=timezone.now())
    queued, _ = judge_run_create(job=queued_job.pk, judge=judge.name, queue=False)
    return done, queued


def _select(html: str, name: str) -> str:
    match = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S)
    assert match, f"no <select name={name}>"
    return match.group(1)


def test_it_offers_the_finished_runs_over_jobs_by_the_judges_name(client, admin_user, judged_jobs):
    done, queued = judged_jobs
    client.force_login(admin_user)
    options = _select(client.get("/pools/new/").content.decode(), "judge_run")
    offered = dict(re.findall(r'<option value="(\d*)"[^>]*>([^<]*)</option>', options))
    assert set(offered) == {"", str(done.pk)}  # the queued run is not offered
    label = offered[str(done.pk)]
    # The judge by name and version, the job it judged and the judge job as the jobs page numbers it ("#N judge").
    assert f"smol-judge v1 over job #{done.source_job_id}" in label
    assert f"run {done.pk}" in label and f"judge job #{done.job_id}" in label


def test_a_refused_active_draw_keeps_the_fields_and_the_chosen_run(client, admin_user, judged_jobs):
    done, _ = judged_jobs
    client.force_login(admin_user)
    form = {"name": "kept-name", "seed": "11", "active": "on", "judge_run": str(done.pk), "budget": "99"}
    response = client.post("/pools/new/", form)  # no job ticked: the run's job; a budget beyond its 2 contexts
    html = response.content.decode()
    assert response.status_code == 200 and "at most the job&#x27;s 2 contexts" in html
    assert not Pool.objects.filter(name="kept-name").exists()
    assert 'value="kept-name"' in html and 'value="99"' in html and 'value="11"' in html
    assert re.search(r'name="active"[^>]*checked', html)
    assert f'<option value="{done.pk}" selected>' in _select(html, "judge_run")


def test_the_chosen_run_names_the_job_to_draw_from(client, admin_user, judged_jobs):
    done, _ = judged_jobs
    client.force_login(admin_user)
    form = {"name": "from-run", "seed": "0", "active": "on", "judge_run": str(done.pk), "budget": "2"}
    response = client.post("/pools/new/", form)  # no job ticked; a budget of every context draws them all
    assert response.status_code == 302, response.content.decode()[-1500:]
    pool = Pool.objects.get(name="from-run")
    assert list(pool.jobs.values_list("pk", flat=True)) == [done.source_job_id] and pool.items.count() == 2


def test_a_run_id_that_is_not_offered_is_refused_as_a_choice(client, admin_user, judged_jobs):
    _, queued = judged_jobs
    client.force_login(admin_user)
    form = {"name": "queued-run", "seed": "0", "active": "on", "judge_run": str(queued.pk), "budget": "1"}
    response = client.post("/pools/new/", form)
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Pool.objects.filter(name="queued-run").exists()
