"""The `judge` job kind (generation/jobs/kinds.py): a judge run's work is a job like any other, so it gets the
chunks, leases, progress, estimate, cancel, resume and retries of generation jobs.

The job's units are the pool's item ids (in id order), or, for a run over a generation job, that job's generation
ids (in id order), one machine label each. The job's `options` say which run it does: `pool_id` or `job_id`,
`judge_id`, `mode`, `k`, `temperature` (with `pool` and `judge` names for the pages); its `seed` column is the run's
seed and its `model` the judge's own. `JudgeRun` is the judging app's row for the job (created
with it by `judge_run_create`, or on its first chunk when the job came from the generic jobs API).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from annotation.models import Pool, PoolItem
from generation.jobs.kinds import JobKind
from generation.jobs.progress import job_rows_write
from generation.models import Generation, GenerationJob, JobChunk
from generation.parameters import JobParameterError, JobParameters
from judging.models import Judge, JudgeRun, MachineLabel
from judging.services.runs import judge_run_parameters_validate


def judge_run_for_job(*, job: GenerationJob) -> JudgeRun:
    """The job's run row (made from its options when the job was queued without one)."""
    run = JudgeRun.objects.select_related("judge__model", "pool").filter(job=job).first()
    if run is not None:
        return run
    options = job.options
    run, _ = JudgeRun.objects.get_or_create(
        job=job,
        defaults={
            "judge": Judge.objects.get(pk=options["judge_id"]),
            "pool": Pool.objects.get(pk=options["pool_id"]) if options.get("pool_id") is not None else None,
            "source_job": (
                GenerationJob.objects.get(pk=options["job_id"]) if options.get("job_id") is not None else None
            ),
            "mode": options["mode"],
            "k": options["k"],
            "temperature": options["temperature"],
            "seed": job.seed,
            "total_items": job.total_units,
            "created_by": job.created_by,
        },
    )
    return JudgeRun.objects.select_related("judge__model", "pool").get(pk=run.pk)


class JudgeKind(JobKind[JobParameters]):
    needs_dataset = False
    unit_label = "items"
    item_label = "labels"

    def options_validate(self, *, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        """`pool` and `judge` by name (or `pool_id`, `judge_id`) or the generation job's id (`job_id`) instead of
        the pool, `mode`, `k`, `temperature`; the seed is the job's. The job runs the judge's own model, whatever
        model was asked for."""
        over_job = options.get("job_id") not in (None, "")
        try:
            params = judge_run_parameters_validate(
                pool=None if over_job else _row_or_name(options, "pool"),
                job=options.get("job_id") if over_job else None,
                judge=_row_or_name(options, "judge"),
                mode=options.get("mode"),
                k=options.get("k"),
                temperature=options.get("temperature"),
                seed=values.get("seed", 0),
            )
        except JobParameterError as exc:
            raise serializers.ValidationError(exc.errors) from None
        values["model"] = params.judge.model
        scope = (
            {"pool_id": params.pool.pk, "pool": params.pool.name}
            if params.pool is not None
            else {"job_id": params.source_job.pk if params.source_job is not None else None}
        )
        return {
            **scope,
            "judge_id": params.judge.pk,
            "judge": params.judge.name,
            "version": params.judge.version,
            "mode": params.mode,
            "k": params.k,
            "temperature": params.temperature,
        }

    def units(self, *, params: JobParameters) -> list[int]:
        if params.options.get("job_id") is not None:
            generations = Generation.objects.filter(job_id=params.options["job_id"])
            return list(generations.order_by("id").values_list("id", flat=True))
        return list(
            PoolItem.objects.filter(pool_id=params.options["pool_id"]).order_by("id").values_list("id", flat=True)
        )

    def run_chunk(
        self, *, job: GenerationJob, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]
    ) -> bool:
        from judging.services.labels import judge_chunk_label

        run = judge_run_for_job(job=job)
        if stop():
            return False
        judge_chunk_label(
            run=run,
            item_ids=list(chunk.unit_ids),
            chunk_index=chunk.index,
            write=lambda save: job_rows_write(job_id=job.pk, write=save),
        )
        step_done()
        return not stop()

    def counts(self, *, job: GenerationJob) -> tuple[int, int]:
        done = MachineLabel.objects.filter(run__job=job).count()
        return done, done

    def describe(self, *, job: GenerationJob) -> str:
        options = job.options
        scope = f"job {options['job_id']}" if options.get("job_id") is not None else f"pool {options.get('pool')}"
        return f"judge {options.get('judge')} v{options.get('version')} ({options.get('mode')}) on {scope}"


def _row_or_name(options: dict[str, Any], what: str):
    if options.get(f"{what}_id") is not None:
        model = Pool if what == "pool" else Judge
        row = model.objects.filter(pk=options[f"{what}_id"]).first()
        return row if row is not None else f"#{options[f'{what}_id']}"
    return options.get(what, "")
