"""Job services: validation, selection and chunking, idempotent chunks, cancellation, failures, the CLI and export."""

import csv
import json
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from generation.jobs import runner
from generation.jobs import services as job_services
from generation.jobs.chunks import chunk_run
from generation.jobs.services import JobParameterError, JobStateError, job_cancel, job_create, job_progress_refresh
from generation.models import Generation, Job, JobChunk, JobStatus, ProbResult
from generation.selectors import EXPORT_COLUMNS

TINY = {"samples": 2, "max_new_tokens": 3, "per_pronoun": 1}


@pytest.fixture
def tiny_job(smollm2, demo_ruff):
    smollm2.batch_size = 2
    smollm2.save()
    return job_create(model="smollm2-135m", dataset="demo-ruff", queue=False, **TINY)


class TestJobCreate:
    @pytest.mark.parametrize(
        ("override", "field", "words"),
        [
            ({"model": "gpt-9"}, "model", "unknown model 'gpt-9'"),
            ({"dataset": "nope"}, "dataset", "unknown dataset 'nope'"),
            ({"pronouns": ["he", "ze"]}, "pronouns", "'ze'"),
            ({"pronouns": []}, "pronouns", "at least one"),
            ({"settings": ["middle"]}, "settings", "'middle'"),
            ({"samples": 0}, "samples", "from 1"),
            ({"top_p": 0.0}, "top_p", "(0, 1]"),
            ({"top_p": 1.5}, "top_p", "(0, 1]"),
            ({"top_k": -1}, "top_k", ">= 0"),
            ({"num_beams": 0}, "num_beams", "from 1"),
            ({"max_new_tokens": 0}, "max_new_tokens", "from 1"),
            ({"seed": -3}, "seed", "from 0"),
            ({"per_pronoun": 0}, "per_pronoun", ">= 1"),
        ],
    )
    def test_it_rejects_bad_parameters_naming_the_field(self, smollm2, demo_ruff, override, field, words):
        with pytest.raises(JobParameterError) as caught:
            job_create(**{"model": "smollm2-135m", "dataset": "demo-ruff", **override})
        assert field in caught.value.errors
        assert words in caught.value.errors[field]
        assert Job.objects.count() == 0

    def test_it_reports_every_bad_field_at_once(self, smollm2, demo_ruff):
        with pytest.raises(JobParameterError) as caught:
            job_create(model="x", dataset="demo-ruff", samples=0, top_p=2)
        assert set(caught.value.errors) == {"model", "samples", "top_p"}

    def test_it_takes_the_first_instances_of_each_pronoun_in_dataset_order(self, smollm2, demo_ruff):
        job = job_create(model="smollm2-135m", dataset="demo-ruff", pronouns=["xe", "he"], per_pronoun=2, queue=False)
        chunks = list(JobChunk.objects.filter(job=job))
        ids = [i for chunk in chunks for i in chunk.unit_ids]
        expected = []
        for pronoun in ("he", "xe"):
            expected += list(
                demo_ruff.instances.filter(pronoun=pronoun).order_by("ordinal").values_list("id", flat=True)[:2]
            )
        assert sorted(ids) == sorted(expected)
        assert ids == sorted(ids, key=lambda i: demo_ruff.instances.get(pk=i).ordinal)
        assert (job.total_units, job.total_items) == (4, 4 * 2 * 5)
        assert job.generation_run.pronouns == ["he", "xe"] and job.status == JobStatus.QUEUED

    def test_it_cuts_a_small_job_finer_than_the_batch_size_so_its_progress_moves(self, tiny_job):
        sizes = [len(c.unit_ids) for c in tiny_job.chunks.order_by("index")]
        assert sizes == [1, 1, 1, 1]  # 4 instances: one chunk each, not two batches of 2

    @pytest.mark.parametrize(("batch_size", "expected"), [(1, [1] * 36), (2, [2] * 18), (16, [2] * 18)])
    def test_it_caps_chunks_at_the_batch_size_and_about_twenty_per_job(self, smollm2, demo_ruff, batch_size, expected):
        assert demo_ruff.instances.count() == 36
        smollm2.batch_size = batch_size
        smollm2.save()
        job = job_create(model="smollm2-135m", dataset="demo-ruff", queue=False)
        chunks = list(job.chunks.order_by("index"))
        assert [len(c.unit_ids) for c in chunks] == expected
        ordered = list(demo_ruff.instances.order_by("ordinal").values_list("id", flat=True))
        assert [i for c in chunks for i in c.unit_ids] == ordered

    def test_it_queues_only_after_commit(self, smollm2, demo_ruff, monkeypatch, django_capture_on_commit_callbacks):
        dispatched = []
        monkeypatch.setattr(job_services, "job_dispatch", lambda *, job_id: dispatched.append(job_id))
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            job = job_create(model="smollm2-135m", dataset="demo-ruff", per_pronoun=1)
        assert dispatched == [] and len(callbacks) == 1
        callbacks[0]()
        assert dispatched == [job.pk]

    def test_it_runs_a_web_job_in_a_background_thread_without_a_broker(self, tiny_job, monkeypatch, settings):
        settings.CELERY_TASK_ALWAYS_EAGER = True
        ran = threading.Event()
        seen = {}

        def fake_run(*, job_id, progress=None):
            seen["thread"], seen["job"] = threading.current_thread().name, job_id
            ran.set()

        monkeypatch.setattr(runner, "job_run", fake_run)
        runner.job_dispatch(job_id=tiny_job.pk)
        assert ran.wait(10)
        assert seen == {"thread": f"concord-job-{tiny_job.pk}", "job": tiny_job.pk}


class TestCancelAndFailure:
    def test_it_cancels_a_queued_job_and_its_chunks_then_do_nothing(self, tiny_job):
        job_cancel(job=tiny_job)
        chunk_run(chunk_id=tiny_job.chunks.first().pk)  # no model needed: it stops before loading
        tiny_job.refresh_from_db()
        assert tiny_job.status == JobStatus.CANCELLED and tiny_job.finished_at is not None
        assert Generation.objects.count() == ProbResult.objects.count() == 0
        assert tiny_job.chunks.first().attempts == 0

    def test_it_refuses_to_cancel_a_finished_job(self, tiny_job):
        Job.objects.filter(pk=tiny_job.pk).update(status=JobStatus.DONE)
        tiny_job.refresh_from_db()
        with pytest.raises(JobStateError, match="done"):
            job_cancel(job=tiny_job)

    def test_it_stores_the_traceback_of_a_failure(self, tiny_job, monkeypatch):
        def broken(**kwargs):
            raise RuntimeError("the GPU caught fire")

        monkeypatch.setattr("generation.engines.hf.engine.model_load", broken)
        with pytest.raises(RuntimeError):
            chunk_run(chunk_id=tiny_job.chunks.first().pk)
        tiny_job.refresh_from_db()
        assert tiny_job.status == JobStatus.FAILED
        assert "Traceback" in tiny_job.error and "the GPU caught fire" in tiny_job.error
        chunk_run(chunk_id=tiny_job.chunks.last().pk)  # the other chunk sees the failure and stops
        assert Generation.objects.count() == 0


@pytest.mark.slow
class TestChunkRun:
    def test_it_writes_each_row_once_even_when_run_twice(self, tiny_job, loaded_model):
        first, *others = tiny_job.chunks.order_by("index")
        chunk_run(chunk_id=first.pk)
        rows = sorted(Generation.objects.values_list("instance_id", "setting", "sample_index", "continuation"))
        assert len(rows) == 1 * 2 * 2 and ProbResult.objects.count() == 1
        first.refresh_from_db()
        assert first.finished_at is not None and first.lease_owner == "" and first.lease_expires_at is None
        # A chunk message delivered again after it finished does nothing.
        chunk_run(chunk_id=first.pk)
        assert sorted(Generation.objects.values_list("instance_id", "setting", "sample_index", "continuation")) == rows
        job = job_progress_refresh(job_id=tiny_job.pk)
        assert (job.status, job.done_units, job.done_items) == (JobStatus.RUNNING, 1, 4)

        # A worker lost mid-step: the re-run reproduces exactly the rows that were missing.
        Generation.objects.filter(setting="post", sample_index=1).delete()
        JobChunk.objects.filter(pk=first.pk).update(finished_at=None)
        chunk_run(chunk_id=first.pk)
        assert sorted(Generation.objects.values_list("instance_id", "setting", "sample_index", "continuation")) == rows
        first.refresh_from_db()
        assert first.attempts == 2 and ProbResult.objects.count() == 1

        for chunk in others:
            chunk_run(chunk_id=chunk.pk)
        job.refresh_from_db()
        assert (job.status, job.done_units, job.done_items) == (JobStatus.DONE, 4, 16)
        for generation in Generation.objects.select_related("instance__template"):
            assert generation.context.startswith(generation.instance.text.split(generation.instance.template.mask)[0])

    def test_a_chunk_samples_its_settings_in_one_call_each_from_its_own_seed(
        self, two_layer_row, demo_ruff, two_layer_model, monkeypatch
    ):
        """Both settings decoded as one batch, each setting's text that of its own call with its own seed; a re-run
        that misses one setting samples that one alone and gets the same text."""
        from generation.engines.hf import sampling
        from generation.engines.hf.sampling import Decoding, sample_continuations
        from generation.jobs.generation_kind import chunk_seed

        two_layer_row.batch_size = 2
        two_layer_row.save()
        job = job_create(model=two_layer_row.name, dataset="demo-ruff", queue=False, samples=2, max_new_tokens=40)
        groups: list[int] = []
        real = sampling._grouped_rows
        monkeypatch.setattr(
            sampling, "_grouped_rows", lambda loaded, rows, *args: groups.append(len(rows)) or real(loaded, rows, *args)
        )
        first = job.chunks.order_by("index").first()
        assert len(first.unit_ids) == 2  # 36 instances: chunks of two
        chunk_run(chunk_id=first.pk)
        assert groups == [2]

        def stored(setting):
            rows = Generation.objects.filter(job=job, setting=setting).order_by("instance__ordinal", "sample_index")
            return [g.continuation for g in rows], list(dict.fromkeys(g.context for g in rows))

        decoding = Decoding(
            samples=2, max_new_tokens=40, top_k=job.generation_run.top_k, top_p=job.generation_run.top_p
        )
        for setting in ("pre", "post"):
            texts, contexts = stored(setting)
            seed = chunk_seed(job_seed=job.generation_run.seed, chunk_index=first.index, setting=setting)
            own = sample_continuations(loaded=two_layer_model, contexts=contexts, decoding=decoding, seed=seed)
            assert len(texts) == 2 * len(contexts) and texts == [text for row in own for text in row]

        before = stored("post")
        Generation.objects.filter(job=job, setting="post").delete()
        JobChunk.objects.filter(pk=first.pk).update(finished_at=None)
        chunk_run(chunk_id=first.pk)
        assert groups == [2] and stored("post") == before  # one group: its own call

    def test_it_runs_from_the_cli_and_exports_the_rows(self, smollm2, demo_ruff, loaded_model, tmp_path):
        out = StringIO()
        call_command(
            "generate",
            "--dataset=demo-ruff",
            "--per-pronoun=1",
            "--settings=pre",
            "--samples=1",
            "--max-new-tokens=3",
            "--seed=7",
            "--wait",
            stdout=out,
            stderr=StringIO(),
        )
        summary = json.loads(out.getvalue().strip().splitlines()[-1])
        job = Job.objects.get()
        assert summary == {"job": job.pk, "status": "done", "instances": 4, "generations": 4}
        assert job.generation_run.settings == ["pre"] and job.generation_run.seed == 7

        path = tmp_path / "gens.csv"
        call_command("export_generations", f"--job={job.pk}", f"--out={path}", stdout=StringIO())
        with path.open() as handle:
            reader = csv.DictReader(handle)
            assert tuple(reader.fieldnames) == EXPORT_COLUMNS
            rows = list(reader)
        assert len(rows) == 4
        row = rows[0]
        instance = job.dataset.instances.get(pk=row["instance_id"])
        assert row["template"] == instance.text and "$" in row["template"]
        assert row["pronoun"] == instance.pronoun and row["setting"] == "pre"
        assert row["prob_prediction"] in ("he", "she", "they", "xe") and row["heuristic_correct"] in ("0", "1")


class TestCli:
    def test_it_rejects_bad_parameters_naming_them(self, smollm2, demo_ruff):
        with pytest.raises(CommandError, match=r"samples: must be .*; .*top_p: must be in \(0, 1\]"):
            call_command(
                "generate", "--dataset=demo-ruff", "--samples=0", "--top-p=0", stdout=StringIO(), stderr=StringIO()
            )
        with pytest.raises(CommandError, match="dataset: unknown dataset 'nope'"):
            call_command("generate", "--dataset=nope", stdout=StringIO(), stderr=StringIO())
        assert Job.objects.count() == 0

    def test_it_says_which_job_is_missing_on_export(self, db, tmp_path):
        with pytest.raises(CommandError, match="no generation job 999"):
            call_command("export_generations", "--job=999", f"--out={tmp_path / 'x.csv'}")


@pytest.mark.slow  # starts a process; the full suite runs it
def test_the_generate_command_reads_settings_as_generation_settings_from_the_shell(tmp_path):
    """Django treats a global --settings as its settings module; manage.py hands it to `generate` instead."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.db_template import sqlite_migrated

    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "HF_HUB_OFFLINE": "1"}
    env.pop("CELERY_BROKER_URL", None)
    sqlite_migrated(tmp_path / "db.sqlite3", env)
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "generate",
            "--model",
            "smollm2-135m",
            "--dataset",
            "nowhere",
            "--settings",
            "middle",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "No module named 'middle'" not in result.stderr
    assert "settings" in result.stderr and "middle" in result.stderr
    assert "dataset" in result.stderr and "nowhere" in result.stderr
