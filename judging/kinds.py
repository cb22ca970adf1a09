"""The `judge` job kind (generation/jobs/kinds.py): a judge run's work is a job like any other, so it gets the
chunks, leases, progress, estimate, cancel, resume and retries of generation jobs.

The job's units are the pool's item ids (in id order), or, for a run over a generation job, that job's generation
ids (in id order), one machine label each. A run's parameters are validated here once
(`judge_run_parameters_validate`, for the generic jobs API through `JudgeKind.options_validate` and for
`judge_run_create`) and stored once, in the kind's own table: `JudgeRun` (its pool or job, judge, mode, `k`,
temperature and seed), written with the job by `JudgeKind.rows_create`. The job holds only what every job has: the
judge's own model, the status and progress (`total_units`: the run's items).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from annotation.models import Pool, PoolItem
from generation.engines import EngineUnavailable, engine_check
from generation.jobs.kinds import JobKind
from generation.jobs.progress import job_rows_write
from generation.models import GENERATION_KIND, Generation, Job, JobChunk, JobStatus
from generation.parameters import MAX_SEED, JobParameterError, JobParameters
from judging.models import RUN_CONCORD, RUN_IMPORTED, Judge, JudgeMode, JudgeRun, MachineLabel
from judging.services.judges import judge_latest

DEFAULT_K = 5
DEFAULT_TEMPERATURE = 0.7
MAX_K = 100


@dataclass(frozen=True)
class RunParameters:
    pool: Pool | None
    judge: Judge
    mode: str
    k: int
    temperature: float
    seed: int
    source_job: Job | None = None

    def options(self) -> dict[str, Any]:
        """The run's parameters as the judge kind's `rows_create` reads them (the seed is the job's parameter)."""
        scope: dict[str, int | None] = (
            {"pool_id": self.pool.pk}
            if self.pool is not None
            else {"job_id": self.source_job.pk if self.source_job is not None else None}
        )
        return {**scope, "judge_id": self.judge.pk, "mode": self.mode, "k": self.k, "temperature": self.temperature}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _job_check(job: int | str | Job, errors: dict[str, str]) -> Job | None:
    """The finished generation job a run over a job labels (by id or row); a problem goes into `errors`."""
    chosen: Job | None
    if isinstance(job, Job):
        chosen = job
    else:
        try:
            job_id = int(job)
        except (TypeError, ValueError):
            errors["job"] = f"a generation job's id is a whole number, got {job!r}"
            return None
        chosen = Job.objects.filter(pk=job_id).first()
        if chosen is None:
            errors["job"] = f"no generation job {job_id}"
            return None
    if chosen.kind != GENERATION_KIND:
        errors["job"] = f"job {chosen.pk} is a {chosen.kind} job; a judge runs over a generation job"
    elif chosen.status != JobStatus.DONE:
        errors["job"] = f"job {chosen.pk} is {chosen.status}; a judge runs over a finished generation job"
    elif not Generation.objects.filter(job=chosen).exists():
        errors["job"] = f"job {chosen.pk} has no generations to judge"
    return chosen


def judge_run_parameters_validate(
    *,
    pool: str | Pool | None = None,
    judge: str | Judge,
    job: int | str | Job | None = None,
    mode: str | None = None,
    k: int | None = None,
    temperature: float | None = None,
    seed: int = 0,
) -> RunParameters:
    """Check every parameter; all problems are reported at once, each under its field name. A run is over a pool or
    over a finished generation job (`job`, its id or row): exactly one. `judge` by name means its latest version;
    the mode defaults to the judge's. `k` is at least 1 and the temperature above 0."""
    errors: dict[str, str] = {}
    chosen_pool: Pool | None = None
    chosen_job: Job | None = None
    if (pool is None or pool == "") == (job is None or job == ""):
        errors["pool"] = (
            "give a pool or a generation job (--pool or --job), not both"
            if pool
            else ("give a pool or a generation job to judge (--pool or --job)")
        )
    elif job is not None and job != "":
        chosen_job = _job_check(job, errors)
    else:
        chosen_pool = pool if isinstance(pool, Pool) else Pool.objects.filter(name=pool).first()
        if chosen_pool is None:
            known = ", ".join(Pool.objects.order_by("name").values_list("name", flat=True)) or "none"
            errors["pool"] = f"unknown pool {pool!r}; pools: {known}"
        elif not chosen_pool.items.exists():
            errors["pool"] = f"pool {chosen_pool.name} has no items to judge"
    chosen_judge = judge if isinstance(judge, Judge) else judge_latest(name=judge)
    if chosen_judge is None:
        known = ", ".join(sorted(set(Judge.objects.values_list("name", flat=True)))) or "none (add one with judge_add)"
        errors["judge"] = f"unknown judge {judge!r}; judges: {known}"
    mode = mode or (chosen_judge.mode if chosen_judge is not None else JudgeMode.LIKELIHOOD)
    runnable = [value for value in JudgeMode.values if value != JudgeMode.IMPORTED]
    if chosen_judge is not None and chosen_judge.external:
        errors["judge"] = f"{chosen_judge} is an external judge: Concord never runs it (import its labels instead)"
    elif mode not in runnable:
        errors["mode"] = f"unknown mode {mode!r}; use {' or '.join(runnable)}"
    if k is not None and (not _is_int(k) or not 1 <= k <= MAX_K):
        errors["k"] = f"must be a whole number from 1 to {MAX_K}, got {k!r}"
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 < temperature <= 100
    ):
        errors["temperature"] = f"must be a number > 0, got {temperature!r}"
    if not _is_int(seed) or not 0 <= seed <= MAX_SEED:
        errors["seed"] = f"must be a whole number from 0 to {MAX_SEED}, got {seed!r}"
    if errors or (chosen_pool is None and chosen_job is None) or chosen_judge is None:
        raise JobParameterError(errors)
    sampling = mode == JudgeMode.SAMPLING
    return RunParameters(
        pool=chosen_pool,
        source_job=chosen_job,
        judge=chosen_judge,
        mode=mode,
        # Likelihood mode neither samples nor uses a temperature: stored as 1 so that equal runs compare equal.
        k=(DEFAULT_K if k is None else k) if sampling else 1,
        temperature=float(DEFAULT_TEMPERATURE if temperature is None else temperature) if sampling else 1.0,
        seed=seed,
    )


def judge_run_for_job(*, job: Job) -> JudgeRun:
    """The job's run row, written with the job (`JudgeKind.rows_create`)."""
    return JudgeRun.objects.select_related("judge__model", "pool", "job").get(job=job)


class JudgeKind(JobKind[JobParameters]):
    needs_dataset = False
    rows_related = ("judge_run__judge", "judge_run__pool")
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
        try:  # the judge's own model, in this mode, on its engine (the job's `model` was checked before)
            engine_check(engine=None, language_model=params.judge.model, judge_mode=params.mode)
        except EngineUnavailable as exc:
            raise serializers.ValidationError({"engine": str(exc)}) from None
        values["model"] = params.judge.model
        return params.options()

    def options_kept(self, *, params: JobParameters) -> dict[str, Any]:
        return {}  # the run's parameters are its row's (rows_create)

    def rows_create(self, *, job: Job, params: JobParameters) -> None:
        options = params.options
        JudgeRun.objects.create(
            job=job,
            judge_id=options["judge_id"],
            pool_id=options.get("pool_id"),
            source_job_id=options.get("job_id"),
            mode=options["mode"],
            k=options["k"],
            temperature=options["temperature"],
            seed=params.seed,
            origin=options.get("origin", RUN_CONCORD),
            source_file=options.get("source_file", ""),
            created_by=job.created_by,
        )

    def parameters(self, *, job: Job) -> dict[str, Any]:
        """The run's parameters as the jobs API has always given them: the seed, and under `options` what it
        judges (by id and name), the judge version, mode, k and temperature."""
        run = job.judge_run  # the jobs list reads it with the job (generation.selectors.job_list)
        scope = (
            {"pool_id": run.pool_id, "pool": run.pool.name} if run.pool is not None else {"job_id": run.source_job_id}
        )
        imported = {"imported": run.source_file} if run.origin == RUN_IMPORTED else {}
        return {
            "seed": run.seed,
            "options": {
                **scope, "judge_id": run.judge_id, "judge": run.judge.name, "version": run.judge.version,
                "mode": run.mode, "k": run.k, "temperature": run.temperature, **imported,
            },
        }  # fmt: skip

    def units(self, *, params: JobParameters) -> list[int]:
        if params.options.get("job_id") is not None:
            generations = Generation.objects.filter(job_id=params.options["job_id"])
            return list(generations.order_by("id").values_list("id", flat=True))
        return list(
            PoolItem.objects.filter(pool_id=params.options["pool_id"]).order_by("id").values_list("id", flat=True)
        )

    def run_chunk(self, *, job: Job, chunk: JobChunk, stop: Callable[[], bool], step_done: Callable[[], None]) -> bool:
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

    def counts(self, *, job: Job) -> tuple[int, int]:
        done = MachineLabel.objects.filter(run__job=job).count()
        return done, done

    def facts(self, *, job: Job) -> dict[str, Any]:
        """Items whose replies named no option (docs/domain.md, 'Models behind an endpoint'): no label, kept."""
        return {"n_unparsed": MachineLabel.objects.filter(run__job=job, label="").count()}

    def describe(self, *, job: Job) -> str:
        run = job.judge_run
        return f"judge {run.judge.name} v{run.judge.version} ({run.mode}) on {run.scope}"


def _row_or_name(options: dict[str, Any], what: str):
    if options.get(f"{what}_id") is not None:
        model = Pool if what == "pool" else Judge
        row = model.objects.filter(pk=options[f"{what}_id"]).first()
        return row if row is not None else f"#{options[f'{what}_id']}"
    return options.get(what, "")
