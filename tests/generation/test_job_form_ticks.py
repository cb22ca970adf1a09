"""The job form: what is ticked is what runs, the size shown is the size queued, and a dataset offers only its own
pronoun families (a templates dataset's ey and fae are not offered for a RUFF dataset)."""

from __future__ import annotations

import shutil

import pytest

from generation.datasets.templates import dataset_import_templates
from generation.forms import JobForm
from generation.jobs import services as job_services
from generation.models import Job
from tests.browser_support import CHROMIUM, log_in
from tests.conftest import DEMO


@pytest.fixture
def demo_templates(db):
    return dataset_import_templates(
        codebook_path=DEMO / "templates_codebook.csv",
        templates_path=DEMO / "templates_templates.csv",
        names_path=DEMO / "templates_names.txt",
        names_per_template=1,
        name="demo-templates",
    ).dataset


@pytest.mark.django_db
def test_the_help_says_the_ticked_ones_run():
    form = JobForm()
    for name in ("pronouns", "settings"):
        assert form.fields[name].help_text.startswith(f"the ticked {'families' if name == 'pronouns' else name} run")


def _shown(page, name: str) -> dict[str, bool]:
    """The boxes of a field a reader sees: {value: ticked}."""
    return page.evaluate(
        """(name) => Object.fromEntries([...document.querySelectorAll(`input[name=${name}]`)]
             .filter((box) => box.getClientRects().length && !box.disabled).map((box) => [box.value, box.checked]))""",
        name,
    )


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_what_is_ticked_runs_and_the_size_shown_is_queued(
    live_server, page, admin_user, smollm2, demo_ruff, demo_templates, monkeypatch
):
    from playwright.sync_api import expect

    # What is queued is checked here, not the run: the job is dispatched (to a worker, or a thread in the embedded
    # default), not run by the model (tests/generation/test_jobs.py runs queued jobs).
    dispatched: list[int] = []
    monkeypatch.setattr(job_services, "job_dispatch", lambda *, job_id: dispatched.append(job_id))
    log_in(page, live_server.url, "ada_admin", "/generation/jobs/new/")
    page.select_option("select[name=dataset]", "demo-ruff")
    # RUFF's four families, all ticked, and the masked settings: the templates dataset's ey and fae are not offered.
    assert _shown(page, "pronouns") == {"he": True, "she": True, "they": True, "xe": True}
    assert _shown(page, "settings") == {"pre": True, "post": True}
    page.select_option("select[name=dataset]", "demo-templates")
    assert set(_shown(page, "pronouns")) == {"he", "she", "they", "xe", "ey", "fae"}
    page.select_option("select[name=dataset]", "demo-ruff")

    # Keep he and xe and pre: the size says 4 instances x 1 setting x 2 samples, and that is the job queued.
    for pronoun in ("she", "they"):
        page.uncheck(f"input[name=pronouns][value={pronoun}]")
    page.uncheck("input[name=settings][value=post]")
    page.fill("input[name=samples]", "2")
    size = page.locator("#job-size")
    expect(size).to_contain_text("4 instances × 1 setting × 2 samples = 8 continuations")
    page.click("button[name=preview]")
    expect(size).to_contain_text("4 instances × 1 setting × 2 samples = 8 continuations")  # the server's count
    assert _shown(page, "pronouns") == {"he": True, "she": False, "they": False, "xe": True}
    page.get_by_role("button", name="Queue job").click()
    expect(page).to_have_url(f"{live_server.url}/generation/jobs/")
    job = Job.objects.get()
    assert (job.generation_run.pronouns, job.generation_run.settings) == (["he", "xe"], ["pre"])
    assert (job.total_units, job.total_items) == (4, 8)
    assert dispatched == [job.pk]
