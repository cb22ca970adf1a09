"""Judge runs: create (or find the finished one) and run as a job of kind `judge`.

A run labels a pool's items, or every generation of a finished generation job (`job`; such a run counts for every
pool drawn from that job). Its units are cut into chunks like a generation job's instances, and the job machinery of
`generation` runs them (generation/jobs/: chunks under leases, progress, ETA, cancel, resume, bounded retries):
judging registers the `judge` kind (judging/kinds.py), which validates a run's parameters and writes its
`JudgeRun` row with the job.
"""

from __future__ import annotations

from pathlib import PurePath

from annotation.models import Pool
from generation.engines import EngineUnavailable, engine_check
from generation.jobs.services import JobStateError, job_create, job_record, job_resume
from generation.models import Job
from generation.parameters import JobParameterError, JobParameters
from judging.kinds import RunParameters, judge_run_parameters_validate
from judging.models import JUDGE_KIND, RUN_IMPORTED, Judge, JudgeMode, JudgeRun


def judge_run_check(**parameters) -> RunParameters:
    """The run's parameters, validated (`judge_run_parameters_validate`), and its judge's engine checked as for any
    job: the engine the judge's model runs on can run it here, in this mode (generation/engines/)."""
    params = judge_run_parameters_validate(**parameters)
    run_engine_check(params)
    return params


def run_engine_check(params: RunParameters) -> None:
    """The judge's engine can answer in the run's mode here (generation.engines.engine_check), else the job
    parameter error naming the engine's problem."""
    try:
        engine_check(engine=None, language_model=params.judge.model, judge_mode=params.mode)
    except EngineUnavailable as exc:
        raise JobParameterError({"engine": str(exc)}) from None


def run_taken_up(same, *, queue: bool):
    """An equal run asked for again (a judge run or a check run): resumed where it has not finished, then read
    afresh."""
    if same.state != "done":
        try:
            job_resume(job_id=same.job.pk, queue=queue)
        except JobStateError:
            pass  # it finished meanwhile
        same.refresh_from_db()
        same.job.refresh_from_db()
    return same


def _job_parameters(params: RunParameters) -> JobParameters:
    """The judge job of a validated and checked run: no dataset, the judge's model, the run's seed and options."""
    return JobParameters(
        model=params.judge.model, dataset=None, kind=JUDGE_KIND, settings=[], seed=params.seed, options=params.options()
    )


def judge_run_create(
    *, rerun: bool = False, created_by=None, queue: bool = True, **parameters
) -> tuple[JudgeRun, bool]:
    """(run, created). A finished run with the same judge version, pool (or job), mode, k, temperature and seed is
    returned as it is unless `rerun`; an unfinished one is resumed (a cancelled one stays cancelled: a new run is
    made). Takes the keyword arguments of `judge_run_parameters_validate` (judging/kinds.py); bad input raises
    `JobParameterError` and writes nothing. The run is a job of kind `judge`, written with its run row (the kind's
    `rows_create`) and queued once this commits (`queue=False`: the caller runs it with
    `generation.jobs.services.job_run`)."""
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
            return run_taken_up(same, queue=queue), False
    run_engine_check(params)
    job = job_create(params=_job_parameters(params), created_by=created_by, queue=queue)
    return JudgeRun.objects.select_related("job", "judge").get(job=job), True


def imported_run_record(
    *,
    judge: Judge,
    count: int,
    source_file: str,
    pool: Pool | None = None,
    source_job: Job | None = None,
    created_by=None,
) -> JudgeRun:
    """The run of an external judge's labels made elsewhere (origin `imported`): a finished judge job that no worker
    runs, with its run row; the caller writes its `count` labels in the same transaction."""
    scope: dict[str, int | None] = (
        {"pool_id": pool.pk} if pool is not None else {"job_id": source_job.pk if source_job else None}
    )
    options = {
        **scope, "judge_id": judge.pk, "mode": JudgeMode.IMPORTED, "k": 1, "temperature": 1.0,
        "origin": RUN_IMPORTED, "source_file": PurePath(source_file).name[:300],
    }  # fmt: skip
    job = job_record(
        params=JobParameters(model=judge.model, dataset=None, kind=JUDGE_KIND, settings=[], options=options),
        units=count,
        items=count,
        created_by=created_by,
    )
    return JudgeRun.objects.select_related("job", "judge").get(job=job)
