"""A new generation job's audit entry keeps its parameters (what it will generate), not an empty `options: {}`."""

from __future__ import annotations

import pytest
from auditlog.models import LogEntry

from generation.jobs.services import job_create
from tests.factories import InstanceFactory, LanguageModelFactory


@pytest.mark.django_db
def test_a_new_jobs_audit_entry_shows_its_parameters(client, admin_user):
    model = LanguageModelFactory(name="audit-model")
    instance = InstanceFactory(pronoun="xe")
    job = job_create(
        model=model.name, dataset=instance.dataset.name, pronouns=["xe"], settings=["pre"], samples=3,
        max_new_tokens=7, seed=11, queue=False, created_by=admin_user,
    )  # fmt: skip
    entry = LogEntry.objects.filter(additional_data__event="job.create").get()
    data = entry.additional_data
    assert entry.object_pk == str(job.pk)
    assert (data["kind"], data["model"], data["dataset"]) == ("generation", "audit-model", instance.dataset.name)
    assert (data["pronouns"], data["settings"], data["samples"], data["max_new_tokens"], data["seed"]) == (
        ["xe"], ["pre"], 3, 7, 11,
    )  # fmt: skip
    assert "options" not in data  # a generation job without an engine or distractor filters has none

    client.force_login(admin_user)
    page = client.get("/audit/").content.decode()
    row = page[page.index("job.create") :]
    row = row[: row.index("</tr>")]
    assert "samples: 3" in row and "options: {}" not in row, row


@pytest.mark.django_db
def test_a_jobs_options_are_kept_when_it_has_some(admin_user):
    model = LanguageModelFactory(name="audit-model")
    instance = InstanceFactory(pronoun="xe")
    job_create(
        model=model.name, dataset=instance.dataset.name, pronouns=["xe"], samples=1, max_new_tokens=1,
        engine="hf", queue=False,
    )  # fmt: skip
    data = LogEntry.objects.filter(additional_data__event="job.create").get().additional_data
    assert data["options"] == {"engine": "hf"}
