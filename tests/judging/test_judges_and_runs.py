"""Judges and their versions, and the validation of a judge run: bad input is a clear error and writes nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from generation.jobs.services import JobParameterError
from generation.models import Job
from judging.kinds import judge_run_parameters_validate
from judging.models import Judge, JudgeRun
from judging.prompts import DEFAULT_TEMPLATE, TemplateError, default_options, template_check
from judging.services.judges import judge_add
from judging.services.runs import judge_run_create

pytestmark = pytest.mark.django_db


def test_it_adds_a_judge_once_and_a_new_version_when_the_template_changes(smollm2):
    first, created = judge_add(name="j", model=smollm2)
    assert created and first.version == 1 and first.template == DEFAULT_TEMPLATE
    again, created = judge_add(name="j", model=smollm2)
    assert not created and again.pk == first.pk
    edited, created = judge_add(name="j", model=smollm2, template=DEFAULT_TEMPLATE + " ")
    assert created and edited.version == 2
    first.refresh_from_db()
    assert first.template == DEFAULT_TEMPLATE  # the old version keeps its template


def test_old_runs_keep_the_version_they_ran_with(smollm2, judged_pool):
    pool, _ = judged_pool
    judge, _ = judge_add(name="j", model=smollm2)
    run, _ = judge_run_create(pool=pool.name, judge="j", queue=False)
    judge_add(name="j", model=smollm2, template=DEFAULT_TEMPLATE.replace("Answer:", "Your answer:"))
    run.refresh_from_db()
    assert run.judge.version == 1
    newer, created = judge_run_create(pool=pool.name, judge="j", queue=False)
    assert created and newer.judge.version == 2


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("", "empty"),
        ("{context} {pronouns} {generation}", "lacks the field {options}"),
        ("{context} {pronouns} {generation} {options} {model}", "unknown template field {model}"),
        ("{context} {pronouns} {generation} {options} {}", "unknown template field {}"),
        ("{context} {pronouns} {generation} {options} {", "not valid format text"),
    ],
)
def test_a_template_without_every_field_is_refused(template, message):
    with pytest.raises(TemplateError, match=message.replace("{", r"\{").replace("}", r"\}")):
        template_check(template=template, options=default_options())


def test_an_option_without_text_is_refused():
    with pytest.raises(TemplateError, match="option 'correct' has no text"):
        template_check(template=DEFAULT_TEMPLATE, options={"correct": " ", "misgendering": " misgendering"})


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ({"pool": "nope"}, "pool"),
        ({"judge": "nope"}, "judge"),
        ({"k": 0, "mode": "sampling"}, "k"),
        ({"temperature": 0.0, "mode": "sampling"}, "temperature"),
        ({"temperature": -1.0, "mode": "sampling"}, "temperature"),
        ({"mode": "vibes"}, "mode"),
    ],
)
def test_bad_run_input_is_a_clear_error_and_makes_no_job(judge, judged_pool, parameters, field):
    pool, _ = judged_pool
    arguments = {"pool": pool.name, "judge": judge.name, **parameters}
    jobs = Job.objects.count()
    with pytest.raises(JobParameterError) as caught:
        judge_run_create(queue=False, **arguments)
    assert field in caught.value.errors
    assert JudgeRun.objects.count() == 0 and Job.objects.count() == jobs


def test_an_unknown_model_for_a_judge_is_a_clear_error(db):
    with pytest.raises(JobParameterError, match="unknown model 'nope'"):
        judge_add(name="j", model="nope")
    assert not Judge.objects.exists()


def test_the_commands_say_what_is_wrong(judge, judged_pool, tmp_path):
    pool, _ = judged_pool
    with pytest.raises(CommandError, match="unknown judge 'nope'"):
        call_command("judge", pool=pool.name, judge="nope", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="k: must be"):
        call_command("judge", "--pool", pool.name, "--judge", judge.name, "--mode", "sampling", "--k", "0",
                     stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(CommandError, match="the template is empty"):
        call_command("judge_add", "--name", "x", "--template", str(empty), stdout=io.StringIO(), stderr=io.StringIO())
    assert not JudgeRun.objects.exists() and not Judge.objects.filter(name="x").exists()


def test_sampling_defaults_and_likelihood_ignores_k_and_temperature(judge, judged_pool):
    pool, _ = judged_pool
    sampling = judge_run_parameters_validate(pool=pool.name, judge=judge.name, mode="sampling")
    assert (sampling.k, sampling.temperature) == (5, 0.7)
    likelihood = judge_run_parameters_validate(pool=pool.name, judge=judge.name, k=9, temperature=0.3)
    assert (likelihood.mode, likelihood.k, likelihood.temperature) == ("likelihood", 1, 1.0)


def test_a_distractor_item_names_both_people_and_marks_the_target(db):
    from judging.prompts import DEFAULT_TEMPLATE, default_options
    from judging.selectors import item_prompt, prompt_item
    from tests.factories import GenerationFactory, InstanceFactory, PoolItemFactory

    instance = InstanceFactory(pronoun="xe", distractors=1, other_person="baker", confuse_pronoun="her", word="nurse")
    item = PoolItemFactory(generation=GenerationFactory(instance=instance), dataset="ruff", pronoun="xe")
    shown = prompt_item(item=item)
    assert (shown.other_pronoun, shown.target, shown.other) == ("she", "nurse", "baker")
    judge = Judge(name="j", version=1, template=DEFAULT_TEMPLATE, options=list(map(list, default_options().items())))
    prompt = item_prompt(judge=judge, item=item)
    assert "The target person (the nurse) uses xe/xem/xyr." in prompt
    assert "The other person (the baker) uses she/her." in prompt
    plain = PoolItemFactory(dataset="misgendered", pronoun="they")
    assert "The person's declared pronouns are they/them/their/theirs/themself." in item_prompt(judge=judge, item=plain)


def test_the_generic_job_api_queues_a_judge_run_by_names(api, admin_user, judge, judged_pool, monkeypatch):
    from judging.kinds import judge_run_for_job

    monkeypatch.setattr("generation.jobs.services.job_dispatch", lambda **kwargs: None)
    pool, items = judged_pool
    api.force_authenticate(admin_user)
    bad = api.post("/api/generation-jobs/", {"kind": "judge", "options": {"pool": pool.name, "judge": "nope"}},
                   format="json")  # fmt: skip
    assert bad.status_code == 400 and "unknown judge 'nope'" in json.dumps(bad.json())
    response = api.post(
        "/api/generation-jobs/",
        {"kind": "judge", "seed": 3, "options": {"pool": pool.name, "judge": judge.name, "mode": "sampling", "k": 2}},
        format="json",
    )
    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.model_id, job.total_units, job.dataset, job.options) == (
        "judge", judge.model_id, len(items), None, {}
    )  # fmt: skip
    run = judge_run_for_job(job=job)
    assert (run.judge_id, run.pool_id, run.mode, run.k, run.temperature, run.seed) == (
        judge.pk, pool.pk, "sampling", 2, 0.7, 3,
    )  # fmt: skip
