"""Judge runs: validate, create (or find the finished one), and run as a job of kind `judge`.

A run labels a pool's items, or every generation of a finished generation job (`job`; such a run counts for every
pool drawn from that job). Its units are cut into chunks like a generation job's instances, and the job machinery of
`generation` runs them (chunks under leases, progress, ETA, cancel, resume, bounded retries): judging registers the
`judge` kind (judging/kinds.py) and the chunk's units are pool item ids or generation ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.models import Pool
from generation.jobs.services import JobStateError, job_create, job_resume
from generation.models import GENERATION_KIND, Generation, GenerationJob, JobStatus
from generation.parameters import MAX_SEED, JobParameterError
from judging.models import JUDGE_KIND, Judge, JudgeMode, JudgeRun
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
    source_job: GenerationJob | None = None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _job_check(job: int | str | GenerationJob, errors: dict[str, str]) -> GenerationJob | None:
    """The finished generation job a run over a job labels (by id or row); a problem goes into `errors`."""
    chosen: GenerationJob | None
    if isinstance(job, GenerationJob):
        chosen = job
    else:
        try:
            job_id = int(job)
        except (TypeError, ValueError):
            errors["job"] = f"a generation job's id is a whole number, got {job!r}"
            return None
        chosen = GenerationJob.objects.filter(pk=job_id).first()
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
    job: int | str | GenerationJob | None = None,
    mode: str | None = None,
    k: int | None = None,
    temperature: float | None = None,
    seed: int = 0,
) -> RunParameters:
    """Check every parameter; all problems are reported at once, each under its field name. A run is over a pool or
    over a finished generation job (`job`, its id or row): exactly one. `judge` by name means its latest version;
    the mode defaults to the judge's."""
    errors: dict[str, str] = {}
    chosen_pool: Pool | None = None
    chosen_job: GenerationJob | None = None
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
    if mode not in JudgeMode.values:
        errors["mode"] = f"unknown mode {mode!r}; use {' or '.join(JudgeMode.values)}"
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


def judge_run_create(
    *, rerun: bool = False, created_by=None, queue: bool = True, **parameters
) -> tuple[JudgeRun, bool]:
    """(run, created). A finished run with the same judge version, pool (or job), mode, k, temperature and seed is returned as
    it is unless `rerun`; an unfinished one is resumed (a cancelled one stays cancelled: a new run is made). Takes the
    keyword arguments of `judge_run_parameters_validate`; bad input raises `JobParameterError` and writes nothing.
    The run is a job of kind `judge` (judging/kinds.py), queued once this commits (`queue=False`: the caller runs it
    with `generation.jobs.services.job_run`)."""
    params = judge_run_parameters_validate(**parameters)
    if not rerun:
        same = (
            JudgeRun.objects.filter(
                judge=params.judge,
                pool=params.pool,
                source_job=params.source_job,
                mode=params.mode,
                k=params.k,
                temperature=params.temperature,
                seed=params.seed,
            )
            .exclude(job__status="cancelled")
            .select_related("job", "judge")
            .order_by("-id")
            .first()
        )
        if same is not None:
            if same.job is not None and same.state != "done":
                try:
                    job_resume(job_id=same.job.pk, queue=queue)
                except JobStateError:
                    pass  # it finished meanwhile
                same.refresh_from_db()
            return same, False
    with transaction.atomic():
        job = job_create(
            kind=JUDGE_KIND,
            model=params.judge.model,
            seed=params.seed,
            options={
                **({"pool_id": params.pool.pk} if params.pool is not None else {}),
                **({"job_id": params.source_job.pk} if params.source_job is not None else {}),
                "judge_id": params.judge.pk,
                "mode": params.mode,
                "k": params.k,
                "temperature": params.temperature,
            },
            created_by=created_by,
            queue=queue,
        )
        run = JudgeRun.objects.create(
            judge=params.judge,
            pool=params.pool,
            source_job=params.source_job,
            job=job,
            mode=params.mode,
            k=params.k,
            temperature=params.temperature,
            seed=params.seed,
            total_items=job.total_units,
            created_by=created_by,
        )
    return run, True
