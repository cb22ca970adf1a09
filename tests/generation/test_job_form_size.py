"""The job form before it queues anything: it starts as a small job, shows the job's size
(instances x settings x samples) and its time at the model's recent pace, puts a summary linking to each error at
the top, and docs/guide-admin.md lists every one of its fields."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from generation.forms import JobForm
from generation.models import Instance, Job, JobChunk
from tests.factories import GenerationJobFactory

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide-admin.md"
FORM = {
    "model": "smollm2-135m",
    "dataset": "demo-ruff",
    "pronouns": ["he", "xe"],
    "settings": ["pre", "post"],
    "samples": 3,
    "max_new_tokens": 10,
    "top_k": 50,
    "top_p": 0.9,
    "num_beams": 1,
    "seed": 5,
    "per_pronoun": 2,
}


@pytest.mark.django_db
def test_every_field_of_the_form_is_in_the_admin_guide():
    guide = GUIDE.read_text()
    missing = [name for name in JobForm().fields if f"| `{name}`" not in guide and f"`{name}` |" not in guide]
    assert missing == [], missing
    assert "| `engine` |" in guide


@pytest.mark.django_db
def test_the_form_starts_as_a_small_job(client, admin_user, smollm2, demo_ruff):
    client.force_login(admin_user)
    page = client.get(reverse("generation-job-new")).content.decode()

    assert re.search(r'name="per_pronoun"[^>]*value="2"', page)
    sizing = json.loads(re.search(r'<script id="job-sizing" type="application/json">(.*?)</script>', page).group(1))
    assert sizing["instances"]["demo-ruff"] == {
        pronoun: Instance.objects.filter(dataset=demo_ruff, pronoun=pronoun).count()
        for pronoun in ("he", "she", "they", "xe")
    }
    assert sizing["seconds_per_row"]["smollm2-135m"] is None  # it has not run here


@pytest.mark.django_db
def test_show_size_and_time_counts_the_job_and_queues_nothing(client, admin_user, smollm2, demo_ruff):
    client.force_login(admin_user)

    page = client.post(reverse("generation-job-new"), {**FORM, "preview": "1"}).content.decode()

    assert "4 instances × 2 settings × 3 samples = 24 continuations" in page
    assert "no time estimate yet" in page
    assert Job.objects.count() == 0
    # The form comes back as sent and says so, so that its script leaves the settings as they were chosen.
    assert re.search(r'<form method="post" class="stack narrow" novalidate data-sent>', page)
    one = client.post(reverse("generation-job-new"), {**FORM, "settings": ["post"], "preview": "1"}).content.decode()
    assert "4 instances × 1 setting × 3 samples = 12 continuations" in one
    assert not re.search(r'<input[^>]*value="pre"[^>]*checked', one)

    # The model ran here before: a chunk of 2 instances x 2 settings x 5 samples (20 rows) took 50 s, 2.5 s a row.
    earlier = GenerationJobFactory(model=smollm2, total_units=2, total_items=20)
    now = timezone.now()
    JobChunk.objects.create(
        job=earlier, index=0, unit_ids=[1, 2], started_at=now - timedelta(seconds=60),
        finished_at=now - timedelta(seconds=10),
    )  # fmt: skip
    page = client.post(reverse("generation-job-new"), {**FORM, "preview": "1"}).content.decode()
    assert "about <strong>1 min 00 s</strong> (30 s–2 min 00 s)" in page  # 24 x 2.5 s
    assert list(Job.objects.all()) == [earlier]


@pytest.mark.django_db
def test_the_errors_are_summed_up_at_the_top_with_a_link_to_each(client, admin_user, smollm2, demo_ruff):
    client.force_login(admin_user)
    bad = {**FORM, "samples": 0, "top_p": 1.5, "seed": -1}

    page = client.post(reverse("generation-job-new"), bad).content.decode()

    summary = page[page.index('id="error-summary"') : page.index('<form method="post" class="stack')]
    links = re.findall(r'<a href="#(field-\w+)">', summary)
    assert sorted(links) == ["field-samples", "field-seed", "field-top_p"]
    for anchor in links:
        assert f'id="{anchor}"' in page
    assert "data-scroll-into-view" in summary
    assert Job.objects.count() == 0


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs Chromium at /usr/bin/chromium")
def test_the_size_follows_the_form_as_it_is_filled_in(live_server, page, admin_user, smollm2, demo_ruff):
    from playwright.sync_api import expect

    from tests.browser_support import log_in

    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    log_in(page, live_server.url, "ada_admin", "/generation/jobs/new/")
    page.select_option("select[name=dataset]", "demo-ruff")
    size = page.locator("#job-size")
    expect(size).to_contain_text("8 instances × 2 settings × 5 samples = 80 continuations")
    page.fill("input[name=samples]", "2")
    page.uncheck("input[name=pronouns][value=she]")
    expect(size).to_contain_text("6 instances × 2 settings × 2 samples = 24 continuations")
    expect(size).to_contain_text("no time estimate yet")

    # Sized by the server, the form comes back as it was sent (pre stays unticked): the job queued is the one sized.
    page.uncheck("input[name=settings][value=pre]")
    page.click("button[name=preview]")
    expect(size).to_contain_text("6 instances × 1 setting × 2 samples = 12 continuations")
    expect(page.locator("input[name=settings][value=pre]")).not_to_be_checked()
    settings = page.evaluate(
        "() => new FormData(document.querySelector('select[name=dataset]').form).getAll('settings')"
    )
    assert settings == ["post"]  # what "Queue job" sends
    assert errors == []
