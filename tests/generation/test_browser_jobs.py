"""The jobs list in Chromium at 1280 and 390 px, light and dark: no sideways scroll, no word broken mid-word, the
place in the queue, and a Cancel that asks first (static/js/generation-jobs.js)."""

import pytest
from django.utils import timezone

from generation.jobs.services import job_create
from generation.models import Job, JobStatus
from tests.browser_support import browser_marks, log_in

pytestmark = [*browser_marks, pytest.mark.django_db(transaction=True)]

# Each text element's words: none may be split across lines (a line box that ends inside a word).
WORDS_BROKEN = """
() => {
  const broken = [];
  const table = document.querySelector('#jobs');
  const walker = document.createTreeWalker(table, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent;
    const re = /[^\\s-]+-?/g;  // a break after a hyphen is a line break, not a word cut
    let match;
    while ((match = re.exec(text))) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) broken.push(match[0]);
    }
  }
  return broken;
}
"""


@pytest.fixture
def three_jobs(smollm2, demo_ruff, admin_user):
    jobs = [
        job_create(model="smollm2-135m", dataset="demo-ruff", per_pronoun=1, created_by=admin_user, queue=False)
        for _ in range(3)
    ]
    Job.objects.filter(pk=jobs[0].pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    return jobs


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_jobs_list_reads_at_every_width_and_in_both_modes(
    live_server, admin_user, browser, three_jobs, width, scheme
):
    context = browser.new_context(viewport={"width": width, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, live_server.url, admin_user.username, "/generation/jobs/")
        first, second, third = three_jobs
        row = page.locator(f'tr[data-job-id="{second.pk}"]')
        assert row.locator(".status").inner_text() == f"queued, 2nd after job {first.pk}"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.evaluate(WORDS_BROKEN) == []
        for job in three_jobs:
            assert page.locator(f'tr[data-job-id="{job.pk}"] button:has-text("Cancel")').is_visible()
    finally:
        context.close()


def test_cancel_asks_first_and_a_no_keeps_the_job(live_server, admin_user, page, three_jobs):
    log_in(page, live_server.url, admin_user.username, "/generation/jobs/")
    job = three_jobs[2]
    asked = []

    def answer(dialog, accept: bool):
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, False))
    page.locator(f'tr[data-job-id="{job.pk}"] button:has-text("Cancel")').click()
    page.wait_for_timeout(300)
    assert asked and "cannot be resumed" in asked[0]
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED

    page.once("dialog", lambda dialog: answer(dialog, True))
    with page.expect_navigation():
        page.locator(f'tr[data-job-id="{job.pk}"] button:has-text("Cancel")').click()
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert page.locator(f'tr[data-job-id="{job.pk}"] button:has-text("Resume")').count() == 0
