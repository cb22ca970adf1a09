"""The `judge` job kind (generation/services/kinds.py): a judge run's work is a job like any other, so it gets the
chunks, leases, progress, estimate, cancel, resume and retries of generation jobs.

The job's units are the pool's item ids (in id order), one machine label each. The job's `options` say which run it
does: `pool_id`, `judge_id`, `mode`, `k`, `temperature` (with `pool` and `judge` names for the pages); its `seed`
column is the run's seed and its `model` the judge's own. `JudgeRun` is the judging app's row for the job (created
with it by `judge_run_create`, or on its first chunk when the job came from the generic jobs API).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from annotation.models import Pool, PoolItem
from generation.models import GenerationJob, JobChunk
from generation.parameters import JobParameterError, JobParameters
from generation.services.kinds import JobKind
from generation.services.progress import job_rows_write
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
            "pool": Pool.objects.get(pk=options["pool_id"]),
            "mode": options["mode"],
            "k": options["k"],
            "temperature": options["temperature"],
            "seed": job.seed,
            "total_items": job.total_instances,
            "created_by": job.created_by,
        },
    )
    return JudgeRun.objects.select_related("judge__model", "pool").get(pk=run.pk)


class JudgeKind(JobKind[JobParameters]):
    needs_dataset = False
    unit_label = "items"
    item_label = "labels"

    def options_validate(self, *, options: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
        """`pool` and `judge` by name (or `pool_id`, `judge_id`), `mode`, `k`, `temperature`; the seed is the job's.
        The job runs the judge's own model, whatever model was asked for."""
        try:
            params = judge_run_parameters_validate(
                pool=_row_or_name(options, "pool"),
                judge=_row_or_name(options, "judge"),
                mode=options.get("mode"),
                k=options.get("k"),
                temperature=options.get("temperature"),
                seed=values.get("seed", 0),
            )
        except JobParameterError as exc:
            raise serializers.ValidationError(exc.errors) from None
        values["model"] = params.judge.model
        return {
            "pool_id": params.pool.pk,
            "pool": params.pool.name,
            "judge_id": params.judge.pk,
            "judge": params.judge.name,
            "version": params.judge.version,
            "mode": params.mode,
            "k": params.k,
            "temperature": params.temperature,
        }

    def units(self, *, params: JobParameters) -> list[int]:
        pool_id = params.options["pool_id"]
        return list(PoolItem.objects.filter(pool_id=pool_id).order_by("id").values_list("id", flat=True))

    def run_chunk(
        self, *, job: GenerationJob, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]
    ) -> bool:
        from judging.services.labels import judge_chunk_label

        run = judge_run_for_job(job=job)
        if stop():
            return False
        judge_chunk_label(
            run=run,
            item_ids=list(chunk.instance_ids),
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
        return f"judge {options.get('judge')} v{options.get('version')} ({options.get('mode')}) on pool {options.get('pool')}"


def _row_or_name(options: dict[str, Any], what: str):
    if options.get(f"{what}_id") is not None:
        model = Pool if what == "pool" else Judge
        row = model.objects.filter(pk=options[f"{what}_id"]).first()
        return row if row is not None else f"#{options[f'{what}_id']}"
    return options.get(what, "")
