"""Generation pages: who may see them, the job form, the cancel button (CSRF), the results table."""

import csv
import io

import pytest
from django.urls import reverse

from generation.jobs.services import job_create
from generation.models import Job, JobStatus
from tests.conftest import PASSWORD
from tests.factories import GenerationFactory, ProbResultFactory


@pytest.fixture
def job(smollm2, demo_ruff):
    return job_create(model="smollm2-135m", dataset="demo-ruff", per_pronoun=1, queue=False)


def pages(job):
    return [
        reverse("generation-jobs"),
        reverse("generation-job-new"),
        reverse("generation-job-results", args=[job.pk]),
    ]


class TestPages:
    @pytest.mark.parametrize("role", ["annotator", "second_annotator", "outsider"])
    def test_it_forbids_every_page_to_non_researchers(self, client, people, job, role):
        client.force_login(people[role])
        for url in pages(job):
            assert client.get(url).status_code == 403, url
        assert client.post(reverse("generation-job-cancel", args=[job.pk])).status_code == 403

    def test_it_sends_anonymous_visitors_to_the_login(self, client, job):
        for url in pages(job):
            response = client.get(url)
            assert response.status_code == 302 and response.url.startswith(reverse("login"))

    def test_it_shows_researchers_the_list_and_results_but_not_the_form(self, client, researcher, job):
        client.force_login(researcher)
        listing = client.get(reverse("generation-jobs"))
        assert listing.status_code == 200
        assert f'data-job-id="{job.pk}"' in listing.content.decode() and "Cancel" not in listing.content.decode()
        assert client.get(reverse("generation-job-new")).status_code == 403
        assert client.get(reverse("generation-job-results", args=[job.pk])).status_code == 200

    def test_it_queues_a_job_from_the_form(self, client, admin_user, smollm2, demo_ruff):
        client.force_login(admin_user)
        form = client.get(reverse("generation-job-new"))
        assert "demo-ruff" in form.content.decode()
        data = {
            "model": "smollm2-135m",
            "dataset": "demo-ruff",
            "pronouns": ["he", "xe"],
            "settings": ["pre"],
            "samples": 2,
            "max_new_tokens": 10,
            "top_k": 50,
            "top_p": 0.9,
            "num_beams": 1,
            "seed": 5,
            "per_pronoun": 1,
        }
        response = client.post(reverse("generation-job-new"), data)
        assert response.status_code == 302
        job = Job.objects.get()
        assert (
            job.generation_run.pronouns,
            job.generation_run.settings,
            job.generation_run.samples,
            job.generation_run.seed,
            job.total_units,
        ) == (
            ["he", "xe"],
            ["pre"],
            2,
            5,
            2,
        )

    def test_it_shows_form_errors_for_bad_parameters(self, client, admin_user, smollm2, demo_ruff):
        client.force_login(admin_user)
        data = {"model": "smollm2-135m", "dataset": "demo-ruff", "pronouns": ["he"], "settings": ["pre"]}
        data |= {"samples": 1, "max_new_tokens": 5, "top_k": 5, "top_p": 1.5, "num_beams": 1, "seed": 0}
        response = client.post(reverse("generation-job-new"), data)
        assert response.status_code == 200
        assert "must be in (0, 1]" in response.content.decode()
        assert Job.objects.count() == 0

    def test_it_cancels_from_the_list_with_csrf(self, csrf_client, admin_user, job):
        assert csrf_client.login(username=admin_user.username, password=PASSWORD)
        url = reverse("generation-job-cancel", args=[job.pk])
        assert csrf_client.post(url).status_code == 403
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED
        listing = csrf_client.get(reverse("generation-jobs"))
        assert url in listing.content.decode()
        response = csrf_client.post(url, {"csrfmiddlewaretoken": csrf_client.cookies["csrftoken"].value})
        assert response.status_code == 302
        job.refresh_from_db()
        assert job.status == JobStatus.CANCELLED

    def test_it_lists_generations_with_verdicts_and_prob_results(self, client, researcher, job):
        instance = job.dataset.instances.filter(pronoun="xe").first()
        GenerationFactory(job=job, instance=instance, continuation=" She waved.", setting="pre")
        ProbResultFactory(job=job, instance=instance, prediction="he")
        client.force_login(researcher)
        page = client.get(reverse("generation-job-results", args=[job.pk])).content.decode()
        assert "She waved." in page and "misgendered" in page and "he (" in page
        # The page numbers the instance as its CSV does (instance_id), not by its place in the dataset.
        export = client.get(reverse("generation-job-export", args=[job.pk]))
        (row,) = csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode()))
        shown = f'title="instance {instance.pk}: place {instance.ordinal} in its dataset">{row["instance_id"]}</td>'
        assert row["instance_id"] == str(instance.pk) and shown in page

    def test_it_links_the_pages_from_the_nav_by_role(self, client, admin_user, annotator):
        client.force_login(admin_user)
        home = client.get(reverse("home")).content.decode()
        assert reverse("generation-jobs") in home and reverse("generation-job-new") in home
        client.force_login(annotator)
        assert reverse("generation-jobs") not in client.get(reverse("home")).content.decode()


class TestJobPageActions:
    def test_the_form_reports_every_bad_field_in_one_round(self, client, admin_user, smollm2, demo_ruff):
        client.force_login(admin_user)
        data = {"model": "smollm2-135m", "dataset": "demo-ruff", "pronouns": ["he"], "settings": ["pre"]}
        data |= {"samples": 0, "max_new_tokens": "lots", "top_k": -1, "top_p": 1.5, "num_beams": 0, "seed": -2}
        data |= {"per_pronoun": 0}
        response = client.post(reverse("generation-job-new"), data)
        assert response.status_code == 200
        errors = response.context["form"].errors
        assert set(errors) == {"samples", "max_new_tokens", "top_k", "top_p", "num_beams", "seed", "per_pronoun"}
        assert "must be in (0, 1]" in response.content.decode()
        assert Job.objects.count() == 0

    def test_the_pages_show_elapsed_time_and_time_left(self, client, researcher, job):
        from datetime import timedelta

        from django.utils import timezone

        now = timezone.now()
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.RUNNING,
            started_at=now - timedelta(seconds=125),
            run_started_at=now - timedelta(seconds=125),
            done_items=job.total_items // 2,
        )
        client.force_login(researcher)
        for url in (reverse("generation-jobs"), reverse("generation-job-results", args=[job.pk])):
            page = client.get(url).content.decode()
            assert "2 min 0" in page or "2 min 1" in page, url  # elapsed, and about as long again left
            assert 'class="eta"' in page and 'class="elapsed"' in page
            assert "js/generation-jobs.js" in page

    def test_admins_resume_a_failed_job_from_its_page(self, csrf_client, client, researcher, admin_user, job):
        Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, error="Traceback: boom")
        url = reverse("generation-job-resume", args=[job.pk])
        client.force_login(researcher)
        assert url not in client.get(reverse("generation-job-results", args=[job.pk])).content.decode()
        assert client.post(url).status_code == 403

        assert csrf_client.login(username=admin_user.username, password=PASSWORD)
        page = csrf_client.get(reverse("generation-job-results", args=[job.pk])).content.decode()
        assert url in page and "Resume" in page
        token = csrf_client.cookies["csrftoken"].value
        response = csrf_client.post(url, {"csrfmiddlewaretoken": token, "back": "job"})
        assert response.status_code == 302 and response.url == reverse("generation-job-results", args=[job.pk])
        job.refresh_from_db()
        assert (job.status, job.error, job.resumes) == (JobStatus.QUEUED, "", 1)
        assert url not in csrf_client.get(reverse("generation-jobs")).content.decode()  # queued: a runner takes it

    def test_researchers_download_the_generations_as_safe_csv(self, client, researcher, annotator, job):
        import csv
        import io

        from generation.selectors import EXPORT_COLUMNS

        instance = job.dataset.instances.filter(pronoun="xe").first()
        GenerationFactory(job=job, instance=instance, continuation='=HYPERLINK("http://x")', setting="pre")
        ProbResultFactory(job=job, instance=instance, prediction="he")
        url = reverse("generation-job-export", args=[job.pk])
        client.force_login(annotator)
        assert client.get(url).status_code == 403
        client.force_login(researcher)
        assert url in client.get(reverse("generation-job-results", args=[job.pk])).content.decode()
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        assert f"job-{job.pk}-generations.csv" in response["Content-Disposition"]
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert len(rows) == 1 and tuple(rows[0]) == EXPORT_COLUMNS
        assert rows[0]["continuation"] == '\'=HYPERLINK("http://x")' and rows[0]["prob_prediction"] == "he"
