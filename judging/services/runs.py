"""Judge runs: create (or find the finished one) and run as a job of kind `judge`.

A run labels a pool's items, or every generation of a finished generation job (`job`; such a run counts for every
pool drawn from that job). Its units are cut into chunks like a generation job's instances, and the job machinery of
`generation` runs them (generation/jobs/: chunks under leases, progress, ETA, cancel, resume, bounded retries):
judging registers the `judge` kind (judging/kinds.py), which validates a run's parameters and keeps them in the job.
"""

from __future__ import annotations

from django.db import transaction

from generation.engines import EngineUnavailable, engine_check
from generation.jobs.services import JobStateError, job_create, job_resume
from generation.parameters import JobParameterError, JobParameters
from judging.kinds import RunParameters, judge_run_parameters_validate
from judging.models import JUDGE_KIND, JudgeRun


def _job_parameters(params: RunParameters) -> JobParameters:
    """The judge job of a validated run: no dataset, the judge's model, the run's seed and options. The engine is
    checked as for any job (generation/parameters.py); the run's own parameters were validated by its kind."""
    try:
        engine_check(engine=None, language_model=params.judge.model)
    except EngineUnavailable as exc:
        raise JobParameterError({"engine": str(exc)}) from None
    return JobParameters(
        model=params.judge.model, dataset=None, kind=JUDGE_KIND, settings=[], seed=params.seed, options=params.options()
    )


def judge_run_create(
    *, rerun: bool = False, created_by=None, queue: bool = True, **parameters
) -> tuple[JudgeRun, bool]:
    """(run, created). A finished run with the same judge version, pool (or job), mode, k, temperature and seed is
    returned as it is unless `rerun`; an unfinished one is resumed (a cancelled one stays cancelled: a new run is
    made). Takes the keyword arguments of `judge_run_parameters_validate` (judging/kinds.py); bad input raises
    `JobParameterError` and writes nothing. The run is a job of kind `judge`, queued once this commits
    (`queue=False`: the caller runs it with `generation.jobs.services.job_run`)."""
    params = judge_run_parameters_validate(**parameters)
    if not rerun:
        same = (
            JudgeRun.objects.filter(
                judge=params.judge,
                pool=params.pool,
                source_job=params.source_job,
                job__options__mode=params.mode,
                job__options__k=params.k,
                job__options__temperature=params.temperature,
                job__seed=params.seed,
            )
            .exclude(job__status="cancelled")
            .select_related("job", "judge")
            .order_by("-id")
            .first()
        )
        if same is not None:
            if same.state != "done":
                try:
                    job_resume(job_id=same.job.pk, queue=queue)
                except JobStateError:
                    pass  # it finished meanwhile
                same.refresh_from_db()
                same.job.refresh_from_db()
            return same, False
    job_params = _job_parameters(params)
    with transaction.atomic():
        job = job_create(params=job_params, created_by=created_by, queue=queue)
        run = JudgeRun.objects.create(
            judge=params.judge, pool=params.pool, source_job=params.source_job, job=job, created_by=created_by
        )
    return run, True
