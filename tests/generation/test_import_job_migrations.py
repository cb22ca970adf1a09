"""The migrations that made imports job kinds keep every import row with its state: a pool's `ImportJob` and a
templates dataset's `DatasetImport` become jobs of their kinds (a running one running in its phase, its lease kept on
the job's chunk, its stored pieces the job's input), and migrating back writes them as they were."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("generation", "0022_merge_endpoints"), ("annotation", "0021_merge_scales")]
AFTER = [("generation", "0024_dataset_imports_as_jobs"), ("annotation", "0023_pool_imports_as_jobs")]


def migrate(executor: MigrationExecutor, targets):
    """Migrate to the targets; the project's state after a forward run (Django's own, from the migrations it just
    applied), None after a backward one (whose returned state still holds what it unapplied)."""
    executor.loader.build_graph()  # what the last call applied or unapplied
    plan = executor.migration_plan(targets)
    state = executor.migrate(targets, plan=plan)
    return None if any(backward for _, backward in plan) else state


def models_at(executor: MigrationExecutor, targets):
    """The models as the targets left them. After a forward run, the state `migrate` returns, rendered once, rather
    than a second state built from the first migration on (`loader.project_state`), which renders every model
    again."""
    state = migrate(executor, targets)
    return (state or executor.loader.project_state(targets)).apps


@pytest.mark.django_db(transaction=True)
def test_import_rows_become_jobs_with_their_states_and_back():
    executor = MigrationExecutor(connection)
    old = models_at(executor, BEFORE)
    try:
        Pool = old.get_model("annotation", "Pool")
        ImportJob = old.get_model("annotation", "ImportJob")
        ImportFileChunk = old.get_model("annotation", "ImportFileChunk")
        DatasetImport = old.get_model("generation", "DatasetImport")
        DatasetImportFile = old.get_model("generation", "DatasetImportFile")
        expires = timezone.now() + timedelta(seconds=30)
        pool = Pool.objects.create(name="migrated")
        writing = ImportJob.objects.create(
            pool=pool, status="writing", file_names=["a.csv", "b.csv"], rows_read=7, lease_owner="host:1:2:3:4",
            lease_expires_at=expires, options={"labels": ["yes", "no"]},
        )  # fmt: skip
        ImportFileChunk.objects.create(job=writing, file_index=1, seq=0, data=b"b's bytes")
        ImportJob.objects.create(pool=pool, status="failed", errors=["a.csv:2: x"], error_count=1)
        checking = DatasetImport.objects.create(name="mine", status="checking", file_names={"templates": "t.csv"})
        DatasetImportFile.objects.create(job=checking, key="templates", seq=0, data=b"template lines")
        DatasetImport.objects.create(name="done", status="done", instances_written=24, created_dataset=True)

        new = models_at(executor, AFTER)
        Job = new.get_model("generation", "Job")
        PoolImport = new.get_model("annotation", "PoolImport")
        DatasetUpload = new.get_model("generation", "DatasetUpload")
        JobInput = new.get_model("generation", "JobInput")
        jobs = {
            (job.kind, job.status, job.phase): job
            for job in Job.objects.filter(kind__in=["pool_import", "dataset_import"])
        }
        assert set(jobs) == {
            ("pool_import", "running", "writing"),
            ("pool_import", "failed", ""),
            ("dataset_import", "running", "checking"),
            ("dataset_import", "done", ""),
        }
        running = jobs["pool_import", "running", "writing"]
        chunk = running.chunks.get()
        assert (chunk.lease_owner, chunk.lease_expires_at, chunk.finished_at) == ("host:1:2:3:4", expires, None)
        row = PoolImport.objects.get(pk=running.pk)
        assert (row.pool_id, row.file_names, row.rows_read, row.options) == (
            pool.pk, ["a.csv", "b.csv"], 7, {"labels": ["yes", "no"]},
        )  # fmt: skip
        assert list(JobInput.objects.filter(job=running).values_list("name", "seq", "data")) == [("1", 0, b"b's bytes")]
        assert PoolImport.objects.get(pk=jobs["pool_import", "failed", ""].pk).errors == ["a.csv:2: x"]
        finished = jobs["dataset_import", "done", ""]
        assert (finished.done_items, finished.chunks.get().finished_at is not None) == (1, True)
        upload = DatasetUpload.objects.get(pk=finished.pk)
        assert (upload.instances_written, upload.created_dataset, upload.written) == (24, True, True)
        pieces = JobInput.objects.filter(job=jobs["dataset_import", "running", "checking"])
        assert list(pieces.values_list("name", "data")) == [("templates", b"template lines")]

        back = models_at(executor, BEFORE)
        ImportJob = back.get_model("annotation", "ImportJob")
        DatasetImport = back.get_model("generation", "DatasetImport")
        assert sorted(ImportJob.objects.values_list("status", "rows_read", "lease_owner", "error_count")) == [
            ("failed", 0, "", 1),
            ("writing", 7, "host:1:2:3:4", 0),
        ]
        assert sorted(DatasetImport.objects.values_list("name", "status", "instances_written")) == [
            ("done", "done", 24),
            ("mine", "checking", 0),
        ]
        piece = back.get_model("generation", "DatasetImportFile").objects.get()
        assert (piece.key, bytes(piece.data)) == ("templates", b"template lines")
        chunk = back.get_model("annotation", "ImportFileChunk").objects.get()
        assert (chunk.file_index, bytes(chunk.data)) == (1, b"b's bytes")
    finally:
        migrate(executor, executor.loader.graph.leaf_nodes())
