"""A large templates upload on the datasets page runs in the background, a job of the `dataset_import` kind
(generation/services/dataset_imports.py, generation/jobs/dataset_import_kind.py):
the request stores the files and answers at once, the import reports how far it got and how it ended, errors name
the uploaded files with line and field, and a failed, stopped or cancelled import leaves no row behind."""

from __future__ import annotations

import threading
import time

import pytest
from auditlog.models import LogEntry
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, connections

from generation.datasets import templates as templates_kind
from generation.jobs import dataset_import_kind as run_module
from generation.jobs import services as job_services
from generation.jobs.chunks import chunk_run
from generation.jobs.dataset_import_kind import DATASET_IMPORT_KIND
from generation.jobs.services import JobStateError, uploads_resume
from generation.models import Dataset, DatasetUpload, Instance, Job, JobChunk, JobInput, PronounForm, Template
from generation.services import dataset_imports
from tests.generation.test_templates_kind import CODEBOOK, NAMES, TEMPLATES, exported, run_import, write_files
from tests.generation.test_templates_upload_errors import csv_bytes

URL = "/generation/datasets/"


def upload(templates=TEMPLATES, *, names: bool = True) -> dict:
    data = {
        "name": "uploaded",
        "codebook": SimpleUploadedFile("families.csv", CODEBOOK.encode()),
        "templates": SimpleUploadedFile("study templates.csv", csv_bytes(templates)),
        "names_per_template": 2,
        "seed": 5,
    }
    if names:
        data["names"] = SimpleUploadedFile("people.txt", ("\n".join(NAMES) + "\n").encode())
    return data


def wait_for_imports() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith(dataset_imports.THREAD_PREFIX):
            thread.join(timeout=60)


class Upload:
    """The one upload's state as its page shows it (its progress) and its job's row."""

    def __init__(self, row: DatasetUpload):
        self.row, self.job = row, row.job
        self.pk = row.pk
        self.progress = dataset_imports.dataset_import_progress(job=row)
        self.status = self.progress["status"]
        self.errors, self.error_count = self.progress["errors"], self.progress["error_count"]
        self.instances_expected = row.instances_expected
        self.instances_written = row.instances_written
        self.created_dataset = row.created_dataset
        self.finished_at = self.job.finished_at
        self.lease_owner = JobChunk.objects.get(job=self.job).lease_owner


def the_upload() -> Upload:
    return Upload(DatasetUpload.objects.select_related("job").get())


def upload_row(*, status: str = "queued", phase: str = "", **values) -> DatasetUpload:
    """An upload's job as a request and a runner leave it (no files stored)."""
    job = Job.objects.create(kind=DATASET_IMPORT_KIND, status=status, phase=phase, total_units=1, total_items=1)
    JobChunk.objects.create(job=job, index=0, unit_ids=[0])
    return DatasetUpload.objects.create(job=job, **{"name": "big", "file_names": {"templates": "t.csv"}, **values})


def nothing_written() -> bool:
    return not (Dataset.objects.exists() or Template.objects.exists() or Instance.objects.exists())


@pytest.fixture
def large(monkeypatch):
    """Every upload counts as large: 3 templates x 4 families x 2 draws = 24 instances."""
    monkeypatch.setattr(dataset_imports, "INLINE_INSTANCES_MAX", 23)


@pytest.mark.django_db(transaction=True)  # the import runs after its request commits, in a thread of its own
class TestBackgroundImports:
    def test_a_large_upload_answers_at_once_and_imports_as_the_command_does(self, client, admin_user, large, tmp_path):
        client.force_login(admin_user)

        response = client.post(URL, upload())

        assert response.status_code == 302 and response["Location"].endswith("#dataset-imports")
        wait_for_imports()
        job = the_upload()
        assert (job.status, job.instances_expected, job.instances_written, job.created_dataset) == (
            "done",
            24,
            24,
            True,
        )
        assert not JobInput.objects.exists()  # the stored files go once it ends
        paths = write_files(tmp_path)
        run_import(paths, "--names", str(paths["names"]), "--names-per-template", "2", "--seed", "5")
        assert exported(tmp_path, "uploaded") == exported(tmp_path, "mine")
        page = client.get(URL).content.decode()
        assert 'data-status="done"' in page and "Imported: 24 instances." in page
        assert 'http-equiv="refresh"' not in page  # nothing runs: the page stays put

    def test_a_small_upload_still_imports_in_the_request(self, client, admin_user):
        client.force_login(admin_user)

        assert client.post(URL, upload()).status_code == 302

        assert Dataset.objects.filter(name="uploaded").exists() and not DatasetUpload.objects.exists()

    def test_a_bad_file_fails_with_the_uploaded_files_line_and_field_and_writes_nothing(
        self, client, admin_user, large
    ):
        client.force_login(admin_user)
        templates = [*TEMPLATES, ("z", "{target:nom} left\x00.", "")]

        client.post(URL, upload(templates))
        wait_for_imports()

        job = the_upload()
        assert job.status == "failed" and job.error_count == 1
        assert job.errors[0].startswith("study templates.csv:5: field template: holds a NUL character")
        assert nothing_written() and not PronounForm.objects.exists()
        page = client.get(URL).content.decode()
        assert "Not imported, nothing written" in page and "study templates.csv:5: field template" in page

    def test_name_without_names_is_told_once_in_the_pages_words(self, client, admin_user, large, monkeypatch):
        monkeypatch.setattr(dataset_imports, "INLINE_INSTANCES_MAX", 11)  # 3 templates x 4 families, one draw
        client.force_login(admin_user)

        client.post(URL, upload(names=False))
        wait_for_imports()

        (error,) = the_upload().errors
        assert error.startswith("study templates.csv:2: field template: {name} needs a names file")
        assert "Names" in error and "--names" not in error

    def test_a_failure_while_writing_leaves_no_row_behind(self, client, admin_user, large, monkeypatch):
        calls = []
        write = templates_kind.instances_write

        def fail_on_the_second_batch(rows):
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("the disk is full")
            return write(rows)

        monkeypatch.setattr(templates_kind, "BATCH", 4)
        monkeypatch.setattr(templates_kind, "instances_write", fail_on_the_second_batch)
        client.force_login(admin_user)

        client.post(URL, upload())
        wait_for_imports()

        job = the_upload()
        assert job.status == "failed" and "the disk is full" in job.errors[0] and "nothing written" in job.errors[0]
        assert nothing_written() and not PronounForm.objects.exists()

    def test_progress_is_reported_while_it_checks_and_writes(self, client, admin_user, large, monkeypatch):
        heard: list[tuple[str, int, str]] = []
        progress_of = dataset_imports.dataset_import_progress

        def record(phase: str, count: int, *, job_id: int) -> None:
            heard.append((phase, count, progress_of(job=DatasetUpload.objects.get(pk=job_id))["status"]))

        original = run_module.templates_pieces_import

        def listening(**kwargs):
            inner = kwargs["progress"]
            job_id = DatasetUpload.objects.get().pk

            def both(phase: str, count: int) -> None:
                inner(phase, count)
                record(phase, count, job_id=job_id)

            return original(**{**kwargs, "progress": both})

        monkeypatch.setattr("generation.datasets.templates.BATCH", 4)
        monkeypatch.setattr(run_module, "templates_pieces_import", listening)
        client.force_login(admin_user)

        client.post(URL, upload())
        wait_for_imports()

        assert heard[0] == ("checked", 24, "writing")
        written = [count for phase, count, _ in heard if phase == "writing"]
        assert written == sorted(written) and written[-1] == 24 and len(written) > 1

    def test_the_page_shows_a_running_imports_progress_and_reloads(self, client, admin_user):
        job = upload_row(status="running", phase="writing", instances_expected=12_000)
        cache.set(run_module.progress_key(job.pk, "writing"), 5_000)
        client.force_login(admin_user)

        page = client.get(URL).content.decode()

        assert "Writing: 5000 of 12000 instances." in page
        assert '<progress max="12000" value="5000"' in page and 'http-equiv="refresh"' in page

    def test_an_import_left_by_a_runner_that_is_gone_runs_again_to_its_end(self, client, admin_user, large):
        monkeypatch_dispatch = job_services._submitted_dispatch
        job_services._submitted_dispatch = lambda **kwargs: None  # the process dies before it runs
        try:
            client.force_login(admin_user)
            client.post(URL, upload())
        finally:
            job_services._submitted_dispatch = monkeypatch_dispatch
        Job.objects.update(status="running", phase="writing")
        JobChunk.objects.update(lease_owner="", lease_expires_at=None)

        resumed = uploads_resume(foreground=True)

        job = the_upload()
        assert resumed == [{"import": f"dataset-{job.pk}", "status": "done", "instances": 24}]
        assert Instance.objects.filter(dataset__name="uploaded").count() == 24


def cancel_url(job_id: int) -> str:
    return f"/generation/datasets/imports/{job_id}/cancel/"


def in_another_connection(function) -> threading.Thread:
    """Run `function` in a thread of its own (its own database connection), started here."""

    def run() -> None:
        try:
            function()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def waiting_on_a_lock() -> bool:
    """Whether another connection of this database waits for a row lock (PostgreSQL; inside a transaction the
    statistics are read once unless their snapshot is cleared)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def listening(monkeypatch, hear, *, after: bool = False) -> None:
    """The import's progress calls `hear(phase, count, job_id)` before its own handler (`after`: after it)."""
    original = run_module.templates_pieces_import

    def wrapped(**kwargs):
        inner = kwargs["progress"]
        job_id = DatasetUpload.objects.get().pk

        def both(phase: str, count: int) -> None:
            if not after:
                hear(phase, count, job_id)
            inner(phase, count)
            if after:
                hear(phase, count, job_id)

        return original(**{**kwargs, "progress": both})

    monkeypatch.setattr("generation.datasets.templates.BATCH", 4)
    monkeypatch.setattr(run_module, "templates_pieces_import", wrapped)


@pytest.mark.django_db(transaction=True)  # the import and the cancel run in connections of their own
class TestCancel:
    def test_a_queued_import_is_cancelled_from_the_page_and_never_runs(self, client, admin_user, large, monkeypatch):
        monkeypatch.setattr(job_services, "_submitted_dispatch", lambda **kwargs: None)  # not sent yet
        client.force_login(admin_user)
        client.post(URL, upload())
        job = the_upload()
        assert f'action="{cancel_url(job.pk)}"' in client.get(URL).content.decode()

        response = client.post(cancel_url(job.pk))

        assert response.status_code == 302 and response["Location"].endswith("#dataset-imports")
        job = the_upload()
        assert (job.status, job.lease_owner) == ("cancelled", "") and job.finished_at is not None
        assert not JobInput.objects.exists()  # its stored files are deleted
        chunk_run(chunk_id=JobChunk.objects.get(job_id=job.pk).pk)  # a late delivery leaves it
        assert uploads_resume(foreground=True) == []  # and nothing resumes it
        assert nothing_written() and the_upload().status == "cancelled"
        entry = LogEntry.objects.get(additional_data__event="dataset.import.cancel")
        assert (entry.object_pk, entry.actor_id) == (str(job.pk), admin_user.pk)
        page = client.get(URL).content.decode()
        assert 'data-status="cancelled"' in page and "Cancelled, nothing written." in page
        assert cancel_url(job.pk) not in page and 'http-equiv="refresh"' not in page

    def test_an_ended_import_cannot_be_cancelled(self, client, admin_user, large):
        client.force_login(admin_user)
        client.post(URL, upload())
        wait_for_imports()
        job = the_upload()

        with pytest.raises(JobStateError, match="only a queued or running one can be cancelled"):
            dataset_imports.dataset_import_cancel(job_id=job.pk)
        client.post(cancel_url(job.pk))

        assert the_upload().status == "done"
        assert Instance.objects.filter(dataset__name="uploaded").count() == 24

    def test_cancelling_is_for_the_admin_role(self, client, researcher):
        job = upload_row()
        client.force_login(researcher)

        assert client.post(cancel_url(job.pk)).status_code == 403
        assert the_upload().status == "queued"

    @pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite lets one connection write at a time")
    def test_an_import_cancelled_while_it_writes_writes_nothing(self, client, admin_user, large, monkeypatch):
        cancelled: list[str] = []

        def cancel_at_the_first_batch(phase: str, count: int, job_id: int) -> None:
            if phase == "writing" and not cancelled:
                # Its transaction holds rows written already; the cancel commits beside it.
                in_another_connection(lambda: dataset_imports.dataset_import_cancel(job_id=job_id)).join()
                cancelled.append(the_upload().status)

        listening(monkeypatch, cancel_at_the_first_batch)
        client.force_login(admin_user)

        client.post(URL, upload())
        wait_for_imports()

        assert cancelled == ["cancelled"] and the_upload().status == "cancelled"
        assert nothing_written() and not PronounForm.objects.exists() and not JobInput.objects.exists()

    @pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite lets one connection write at a time")
    def test_a_cancel_that_comes_as_the_write_commits_finds_it_ended(self, client, admin_user, large, monkeypatch):
        refused: list[Exception] = []
        threads: list[threading.Thread] = []

        def cancel(job_id: int) -> None:
            try:
                dataset_imports.dataset_import_cancel(job_id=job_id)
            except JobStateError as exc:
                refused.append(exc)

        def cancel_after_the_last_write(phase: str, count: int, job_id: int) -> None:
            if phase == "written":  # the import's transaction is about to commit: the cancel waits for it
                thread = in_another_connection(lambda: cancel(job_id))
                threads.append(thread)
                while thread.is_alive() and not waiting_on_a_lock():
                    time.sleep(0.01)

        listening(monkeypatch, cancel_after_the_last_write, after=True)  # after the import marked itself ended
        client.force_login(admin_user)

        client.post(URL, upload())
        wait_for_imports()
        for thread in threads:
            thread.join(timeout=60)

        assert len(threads) == 1 and len(refused) == 1
        assert the_upload().status == "done"
        assert Instance.objects.filter(dataset__name="uploaded").count() == 24
