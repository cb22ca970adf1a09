"""REST API for generation jobs: roles per endpoint, validation errors by field, cancel with CSRF."""

import pytest
from django.urls import reverse

from generation.jobs.services import job_create
from generation.models import Job, JobStatus
from tests.conftest import PASSWORD

LIST = "/api/generation-jobs/"


@pytest.fixture
def job(smollm2, demo_ruff, admin_user):
    return job_create(model="smollm2-135m", dataset="demo-ruff", per_pronoun=1, created_by=admin_user, queue=False)


class TestJobApi:
    def test_it_lets_an_admin_queue_a_job(self, api, admin_user, smollm2, demo_ruff):
        api.force_authenticate(admin_user)
        response = api.post(LIST, {"dataset": "demo-ruff", "per_pronoun": 2, "settings": ["post"]}, format="json")
        assert response.status_code == 201, response.json()
        body = response.json()
        assert body["status"] == "queued" and body["model"] == "smollm2-135m"
        assert (body["total_instances"], body["total_generations"]) == (8, 8 * 5)
        assert (body["total_units"], body["done_units"], body["total_items"], body["done_items"]) == (8, 0, 40, 0)
        job = Job.objects.get()
        assert job.pk == body["id"] and job.generation_run.settings == ["post"] and job.created_by == admin_user

    @pytest.mark.parametrize(
        ("payload", "field"),
        [
            ({"dataset": "nope"}, "dataset"),
            ({"dataset": "demo-ruff", "model": "nope"}, "model"),
            ({"dataset": "demo-ruff", "samples": 0}, "samples"),
            ({"dataset": "demo-ruff", "top_p": 1.2}, "top_p"),
            ({"dataset": "demo-ruff", "pronouns": ["ze"]}, "pronouns"),
            ({"dataset": "demo-ruff", "settings": ["mid"]}, "settings"),
            ({"dataset": "demo-ruff", "per_pronoun": 0}, "per_pronoun"),
            ({"dataset": "demo-ruff", "samples": "many"}, "samples"),
        ],
    )
    def test_it_rejects_bad_parameters_naming_the_field(self, api, admin_user, smollm2, demo_ruff, payload, field):
        api.force_authenticate(admin_user)
        response = api.post(LIST, payload, format="json")
        assert response.status_code == 400
        assert field in response.json()
        assert Job.objects.count() == 0

    @pytest.mark.parametrize("role", ["researcher", "annotator", "outsider"])
    def test_it_lets_only_admins_queue(self, api, people, smollm2, demo_ruff, role):
        api.force_authenticate(people[role])
        assert api.post(LIST, {"dataset": "demo-ruff"}, format="json").status_code == 403
        assert Job.objects.count() == 0

    @pytest.mark.parametrize(
        ("role", "expected"), [("admin", 200), ("researcher", 200), ("annotator", 403), ("outsider", 403)]
    )
    def test_it_shows_jobs_to_researchers_and_admins(self, api, people, job, role, expected):
        api.force_authenticate(people[role])
        detail = api.get(f"{LIST}{job.pk}/")
        assert detail.status_code == expected
        assert api.get(LIST).status_code == expected
        if expected == 200:
            assert detail.json()["id"] == job.pk and detail.json()["progress"] == 0.0

    def test_it_asks_anonymous_callers_to_log_in(self, api, job):
        assert api.get(f"{LIST}{job.pk}/").status_code == 401
        assert api.post(LIST, {"dataset": "demo-ruff"}, format="json").status_code == 401
        assert api.post(f"{LIST}{job.pk}/cancel/").status_code == 401

    def test_it_answers_404_for_a_missing_job(self, api, researcher, db):
        api.force_authenticate(researcher)
        assert api.get(f"{LIST}999/").status_code == 404

    def test_it_lets_an_admin_cancel_once(self, api, admin_user, researcher, job):
        api.force_authenticate(researcher)
        assert api.post(f"{LIST}{job.pk}/cancel/").status_code == 403
        api.force_authenticate(admin_user)
        response = api.post(f"{LIST}{job.pk}/cancel/")
        assert response.status_code == 200 and response.json()["status"] == "cancelled"
        job.refresh_from_db()
        assert job.status == JobStatus.CANCELLED
        assert api.post(f"{LIST}{job.pk}/cancel/").status_code == 409

    def test_it_enforces_csrf_on_a_session_cancel(self, csrf_client, admin_user, job):
        assert csrf_client.login(username=admin_user.username, password=PASSWORD)
        response = csrf_client.post(f"{LIST}{job.pk}/cancel/")
        assert response.status_code == 403
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED
        csrf_client.get(reverse("generation-jobs"))
        token = csrf_client.cookies["csrftoken"].value
        response = csrf_client.post(f"{LIST}{job.pk}/cancel/", HTTP_X_CSRFTOKEN=token)
        assert response.status_code == 200
        job.refresh_from_db()
        assert job.status == JobStatus.CANCELLED


class TestJobApiProgressAndResume:
    def test_it_reports_every_bad_field_in_one_answer(self, api, admin_user, smollm2, demo_ruff):
        api.force_authenticate(admin_user)
        payload = {"dataset": "nope", "samples": "many", "top_p": 2, "pronouns": ["ze"], "seed": -1, "top_k": -5}
        response = api.post(LIST, payload, format="json")
        assert response.status_code == 400
        assert set(response.json()) == {"dataset", "samples", "top_p", "pronouns", "seed", "top_k"}
        assert Job.objects.count() == 0

    def test_it_shows_elapsed_time_and_the_time_left(self, api, researcher, job):
        from datetime import timedelta

        from django.utils import timezone

        api.force_authenticate(researcher)
        body = api.get(f"{LIST}{job.pk}/").json()
        assert (body["elapsed_seconds"], body["eta_seconds"], body["resumes"]) == (None, None, 0)
        now = timezone.now()
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.RUNNING,
            started_at=now - timedelta(seconds=60),
            run_started_at=now - timedelta(seconds=60),
            done_items=job.total_items // 4,
        )
        body = api.get(f"{LIST}{job.pk}/").json()
        assert 60 <= body["elapsed_seconds"] < 120
        # A quarter done in a minute: three quarters left, about three minutes.
        assert 180 <= body["eta_seconds"] < 360
        assert body in api.get(LIST).json() or body["id"] in [row["id"] for row in api.get(LIST).json()]

    def test_it_lets_an_admin_resume_an_unfinished_job(self, api, admin_user, researcher, job):
        Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, error="Traceback: boom")
        api.force_authenticate(researcher)
        assert api.get(f"{LIST}{job.pk}/").json()["resumable"] is True
        assert api.post(f"{LIST}{job.pk}/resume/").status_code == 403
        api.force_authenticate(admin_user)
        response = api.post(f"{LIST}{job.pk}/resume/")
        assert response.status_code == 200, response.json()
        assert (response.json()["status"], response.json()["error"], response.json()["resumes"]) == ("queued", "", 1)
        Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
        assert api.post(f"{LIST}{job.pk}/resume/").status_code == 409
        assert api.post(f"{LIST}999999/resume/").status_code == 404

    def test_it_offers_resume_for_a_running_job_only_when_no_runner_holds_it(self, api, researcher, job):
        from datetime import timedelta

        from django.utils import timezone

        from generation.jobs.leases import lease_owner_new
        from generation.models import JobChunk

        api.force_authenticate(researcher)
        Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
        chunk = job.chunks.first()
        JobChunk.objects.filter(pk=chunk.pk).update(
            lease_owner=lease_owner_new(), lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        assert api.get(f"{LIST}{job.pk}/").json()["resumable"] is False  # a live runner works on it
        JobChunk.objects.filter(pk=chunk.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert api.get(f"{LIST}{job.pk}/").json()["resumable"] is True  # its runner is gone
        Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)
        assert api.get(f"{LIST}{job.pk}/").json()["resumable"] is False  # waiting for a runner
