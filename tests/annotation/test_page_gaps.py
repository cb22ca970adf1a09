"""Small gaps of the researchers' and admins' pages (errors in view, links to the report, explained states), as the
server renders them; the browser tests (tests/test_browser_pages.py) check what a reader then sees."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Pool
from tests.annotation.factories import job_with_generations, pool_for
from tests.import_jobs import pool_import_create


@pytest.mark.django_db
def test_the_pool_page_links_to_its_report(client, researcher):
    pool, _ = pool_for(items=1)
    client.force_login(researcher)
    page = client.get(reverse("annotation:pool-detail", args=[pool.name])).content.decode()
    assert f'href="{reverse("report-detail", args=[pool.name])}"' in page


@pytest.mark.django_db
def test_the_newest_failed_import_marks_its_errors_to_be_scrolled_into_view(client, researcher):
    pool, _ = pool_for(items=0)
    pool_import_create(pool=pool, status="failed", file_names=["old.csv"], errors=["old.csv:2: x"], error_count=1)
    pool_import_create(
        pool=pool,
        status="failed",
        file_names=["bad.csv"],
        errors=["bad.csv:2: correct must be 1.0 or 0.0"],
        error_count=1,
    )
    client.force_login(researcher)
    page = client.get(reverse("annotation:pool-detail", args=[pool.name])).content.decode()
    assert page.count("data-scroll-into-view") == 1  # the newest import only
    newest = page.index("data-scroll-into-view")
    assert "bad.csv:2: correct must be 1.0 or 0.0" in page[newest : newest + 400]
    assert "js/page.js" in page


@pytest.mark.django_db
def test_the_pool_form_names_its_checkbox_not_the_commands_flag(client, admin_user):
    job = job_with_generations(instances_per_pronoun=1, samples=5, pronouns=("he",), settings=("pre",))
    client.force_login(admin_user)
    response = client.post("/pools/new/", {"name": "web", "jobs": str(job.pk), "instances": 2, "seed": 1})
    page = response.content.decode()
    assert "too few instances with all their samples" in page
    assert "--allow-short" not in page and "tick &quot;Allow short&quot; below" in page
    assert 'name="allow_short"' in page
    assert not Pool.objects.exists()


@pytest.mark.django_db
def test_the_job_form_loads_the_script_that_ticks_open_for_a_tango_dataset(client, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("generation-job-new")).content.decode()
    assert "js/job-form.js" in page and 'value="open"' in page
