"""Job kinds (generation/jobs/kinds.py): a kind registered by another app gets chunks, progress, cancel, resume
and the jobs pages, with no dataset of its own. The kind here counts numbers; it stands in for a judge run."""

from collections import defaultdict

import pytest
from rest_framework import serializers

from generation.jobs import runner
from generation.jobs.kinds import JobKind, job_kind_register, job_kinds
from generation.jobs.progress import job_rows_write
from generation.jobs.services import JobParameterError, JobStateError, job_cancel, job_create, job_resume, job_run
from generation.models import Job, JobChunk, JobStatus

WRITTEN: dict[int, list[int]] = defaultdict(list)  # job id -> units written, in order (the kind's "rows")


class TallyKind(JobKind):
    needs_dataset = False
    unit_label = "numbers"
    item_label = "tallies"

    def __init__(self):
        self.after_unit = None  # a hook the tests use to act mid-chunk

    def options_validate(self, *, options, values):
        if not isinstance(options.get("n"), int) or options["n"] < 0:
            raise serializers.ValidationError({"n": "give how many numbers to tally"})
        return {"n": options["n"]}

    def units(self, *, params):
        return list(range(1, params.options["n"] + 1))

    def items_per_unit(self, *, params):
        return 2

    def run_chunk(self, *, job, chunk, stop, step_done):
        for unit in chunk.unit_ids:
            if stop():
                return False
            if unit not in WRITTEN[job.pk]:
                job_rows_write(job_id=job.pk, write=lambda unit=unit: WRITTEN[job.pk].append(unit))
            step_done()
            if self.after_unit is not None:
                self.after_unit(job, unit)
        return True

    def counts(self, *, job):
        return len(WRITTEN[job.pk]), 2 * len(WRITTEN[job.pk])

    def describe(self, *, job):
        return f"tally {job.options['n']} numbers with {job.model.name}"


@pytest.fixture
def tally(smollm2, monkeypatch):
    kind = TallyKind()
    job_kind_register("tally", kind)
    monkeypatch.setattr(runner, "BUSY_POLL_SECONDS", 0.05)
    yield kind
    from generation.jobs import kinds

    kinds._KINDS.pop("tally", None)
    WRITTEN.clear()


def test_it_registers_generation_through_the_same_registry():
    assert "generation" in job_kinds()


def test_a_kind_without_a_dataset_is_cut_into_chunks_of_its_units(tally):
    job = job_create(kind="tally", model="smollm2-135m", options={"n": 59}, batch_size=4, queue=False)
    assert job.dataset is None and job.kind == "tally" and job.options == {"n": 59}
    chunks = [c.unit_ids for c in job.chunks.order_by("index")]  # 59 / 20 chunks: 3 per chunk (under 4)
    assert chunks == [list(range(start, min(start + 3, 60))) for start in range(1, 60, 3)]
    assert (job.total_units, job.total_items, job.status) == (59, 118, JobStatus.QUEUED)


def test_it_runs_to_exact_counts_and_shows_on_the_pages(tally, client, api, admin_user):
    job = job_create(kind="tally", model="smollm2-135m", options={"n": 5}, batch_size=2, queue=False)
    job = job_run(job_id=job.pk)
    assert job.status == JobStatus.DONE and (job.done_units, job.done_items) == (5, 10)
    assert WRITTEN[job.pk] == [1, 2, 3, 4, 5]

    client.force_login(admin_user)
    listing = client.get("/generation/jobs/")
    assert listing.status_code == 200 and "tally 5 numbers with smollm2-135m" in listing.content.decode()
    page = client.get(f"/generation/jobs/{job.pk}/")
    assert page.status_code == 200 and "tally 5 numbers" in page.content.decode()
    api.force_authenticate(admin_user)
    body = api.get(f"/api/generation-jobs/{job.pk}/").json()
    assert (body["kind"], body["dataset"], body["description"]) == ("tally", None, "tally 5 numbers with smollm2-135m")


def test_a_cancel_mid_chunk_stops_it_at_the_next_unit_for_good(tally):
    job = job_create(kind="tally", model="smollm2-135m", options={"n": 60}, batch_size=3, queue=False)

    def cancel_after_two(current, unit):
        if unit == 2:
            job_cancel(job=current)

    tally.after_unit = cancel_after_two
    job = job_run(job_id=job.pk)
    assert job.status == JobStatus.CANCELLED and WRITTEN[job.pk] == [1, 2]
    assert JobChunk.objects.filter(job=job, finished_at__isnull=False).count() == 0
    with pytest.raises(JobStateError, match="cancelled"):
        job_resume(job_id=job.pk)
    assert job_run(job_id=job.pk).status == JobStatus.CANCELLED and WRITTEN[job.pk] == [1, 2]


def test_a_failed_run_resumes_where_its_rows_stop(tally):
    job = job_create(kind="tally", model="smollm2-135m", options={"n": 4}, batch_size=2, queue=False)

    def crash_at_three(current, unit):
        if unit == 3:
            raise RuntimeError("the judge fell over")

    tally.after_unit = crash_at_three
    job = job_run(job_id=job.pk)
    assert job.status == JobStatus.FAILED and "the judge fell over" in job.error
    tally.after_unit = None
    job_resume(job_id=job.pk, queue=False)
    job = job_run(job_id=job.pk)
    assert job.status == JobStatus.DONE and WRITTEN[job.pk] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ({"kind": "nope"}, "kind"),
        ({"kind": "tally", "options": {"n": "many"}}, "options"),
        ({"kind": "generation"}, "dataset"),
    ],
)
def test_it_checks_the_kind_its_options_and_whether_it_needs_a_dataset(tally, parameters, field):
    with pytest.raises(JobParameterError) as caught:
        job_create(model="smollm2-135m", queue=False, **parameters)
    assert field in caught.value.errors
    assert Job.objects.count() == 0
