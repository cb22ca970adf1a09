"""The whole report of a pool as one JSON-ready dict: its header, then each declared table's rows
(analysis/report/tables/) built from the pool's `ReportInputs`; and the fingerprint of what it reads, which keys the
report cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery, Sum

from analysis.report.inputs import ReportInputs
from analysis.report.tables import TABLES
from analysis.selectors import automatic, examples, human, tango
from analysis.selectors import judges as judge_selectors
from analysis.selectors import verdict as verdict_selectors
from annotation.labelset import NO_RATES, positive_label, positive_labels
from annotation.models import STUDY, Adjudication, Annotation, Assignment, Pool, PoolItem
from annotation.schema import MISGENDERING
from annotation.selectors.aggregate import AggregationError, pool_aggregates
from common.frames import pd
from generation.models import Job
from generation.models.tango import TangoTemplate
from judging.selectors import covering_runs, run_labels_read_once


def pool_list_for_reports() -> QuerySet[Pool]:
    return Pool.objects.annotate(
        n_items=Count("items", filter=Q(items__kind=STUDY), distinct=True), n_jobs=Count("jobs", distinct=True)
    ).order_by("name")


def _aggregates(*, pool: Pool, frame: pd.DataFrame) -> list[dict]:
    """The pool's aggregated labels per item; none (an empty list) while no item is rated twice."""
    if frame.empty or int(frame["n_annotations"].max()) < 2:
        return []
    try:
        return pool_aggregates(pool=pool)
    except AggregationError:
        return []


def report_data(
    *,
    pool: Pool,
    examples_seed: int = examples.EXAMPLES_SEED,
    human_verdict: str | None = None,
    verdict: verdict_selectors.VerdictParameters | None = None,
) -> dict:
    """Every figure of the report. `verdict` holds the judge's verdict's parameters (epsilon, alpha, delta; checked
    by `verdict_selectors.verdict_parameters`; None: the defaults). Repetition rates are read from the cache that
    `analysis.repetition.repetition_rates_fill` keeps; `report_build` fills it first. Only study items count
    (gold and training items never enter a metric). `human_verdict` picks the human label that the heuristic and the
    accuracies are compared with (`human.HUMAN_VERDICTS`; None: the default rule); it raises ValueError for an
    unknown one and AggregationError for an aggregate of a pool with no item rated twice."""
    with run_labels_read_once():  # the judges' frame, verdict, PPI++ and rates read each run's labels once
        return _report_data(pool=pool, examples_seed=examples_seed, human_verdict=human_verdict, verdict=verdict)


def _report_data(
    *, pool: Pool, examples_seed: int, human_verdict: str | None, verdict: verdict_selectors.VerdictParameters | None
) -> dict:
    labels = list(pool.labels)
    frame = human.pool_item_frame(pool=pool)
    aggregates = _aggregates(pool=pool, frame=frame)
    frame = human.frame_with_human_verdict(
        frame=frame, human=human_verdict, aggregates=aggregates, positive=positive_label(pool) or MISGENDERING
    )
    job_ids = automatic.pool_job_ids(pool=pool)
    judge_runs = covering_runs(pool=pool)  # read once: the judges' frame, verdict and rates all start from them
    inputs = ReportInputs(
        pool=pool,
        labels=labels,
        frame=frame,
        job_ids=job_ids,
        instances=automatic.instance_frame(job_ids=job_ids),
        examples_seed=examples_seed,
        tango=tango.tango_frame(job_ids=job_ids),
        judges=judge_selectors.judge_frame(pool=pool, human=frame, runs=judge_runs),
        judge_runs=judge_runs,
        aggregates=aggregates,
        verdict=verdict or verdict_selectors.VerdictParameters(),
    )
    return {
        "pool": pool.name,
        "labels": labels,
        "human_verdict": human_verdict or "default",
        "n_items": pool.items.filter(kind=STUDY).count(),
        "n_annotated": int(len(frame)),
        "examples_seed": examples_seed,
        "scale": pool.scale,
        "rates_note": None if positive_labels(pool) else NO_RATES,
        **{table.key: table.value(inputs) for table in TABLES if table.built},
    }


# Bump when a change to the report's code changes its output, so that a shared cache (Redis) drops old reports.
REPORT_FORMAT = 5


def _scalar(queryset: QuerySet, group: str, **aggregate: Any) -> Subquery:
    """One aggregate of `queryset` (already filtered on the outer pool) as a scalar subquery."""
    ((name, expression),) = aggregate.items()
    return Subquery(queryset.order_by().values(group).annotate(**{name: expression}).values(name)[:1])


def report_data_version(*, pool: Pool) -> str:
    """A cheap fingerprint of everything `report_data` reads, in one query: the pool's labels, the counts and the
    newest ids and times of its items, annotations, adjudications and assignments, and the progress of its jobs
    (generations and instances done, as the workers count them when a chunk's rows are written; finish times;
    Prob-TANGO verdicts). Counting the generations themselves would read every row (benchmarks/README.md, report section). A new annotation (or an
    edited or deleted one), adjudication, import or finished job gives a new version; the report cache is keyed by it.
    Repetition rates are left out: `report_build` fills them for every generation before it builds, so they follow
    the jobs' progress."""
    row = _versions().filter(pk=pool.pk).get()
    text = json.dumps([REPORT_FORMAT, row], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


@functools.cache
def _versions() -> QuerySet:
    """`report_data_version`'s query over every pool, built once per process (putting its 24 scalar subqueries
    together was half the cost of a call); each call filters a copy of it on one pool."""
    outer = OuterRef("pk")
    items = PoolItem.objects.filter(pool=outer)
    annotations = Annotation.objects.filter(item__pool=outer)
    adjudications = Adjudication.objects.filter(item__pool=outer)
    assignments = Assignment.objects.filter(pool=outer)
    jobs = Job.objects.filter(pools=outer)
    tango_rows = TangoTemplate.objects.filter(job__pools=outer)
    judge_jobs = Job.objects.filter(judge_run__pool=outer)  # LLM judges' runs (judging)
    # Judge runs over the pool's generation jobs count for the pool too.
    job_judge_jobs = Job.objects.filter(judge_run__source_job__pools=outer)
    check_jobs = Job.objects.filter(check_run__pool=outer)  # checks of judges over the pool (judging/checks.py)
    return (
        Pool.objects.all()
        .annotate(
            items_n=_scalar(items, "pool", v=Count("pk")),
            items_max=_scalar(items, "pool", v=Max("pk")),
            items_at=_scalar(items, "pool", v=Max("created_at")),
            annotations_n=_scalar(annotations, "item__pool", v=Count("pk")),
            annotations_max=_scalar(annotations, "item__pool", v=Max("pk")),
            annotations_at=_scalar(annotations, "item__pool", v=Max("updated_at")),
            adjudications_n=_scalar(adjudications, "item__pool", v=Count("pk")),
            adjudications_at=_scalar(adjudications, "item__pool", v=Max("updated_at")),
            assignments_n=_scalar(assignments, "pool", v=Count("pk")),
            assignments_at=_scalar(assignments, "pool", v=Max("created_at")),
            jobs_n=_scalar(jobs, "pools", v=Count("pk")),
            jobs_max=_scalar(jobs, "pools", v=Max("pk")),
            jobs_done=_scalar(jobs, "pools", v=Sum("done_items")),
            jobs_instances=_scalar(jobs, "pools", v=Sum("done_units")),
            jobs_finished=_scalar(jobs, "pools", v=Max("finished_at")),
            jobs_finished_n=_scalar(jobs, "pools", v=Count("finished_at")),
            jobs_resumes=_scalar(jobs, "pools", v=Sum("resumes")),
            tango_n=_scalar(tango_rows, "job__pools", v=Count("pk")),
            judge_jobs_n=_scalar(judge_jobs, "judge_run__pool", v=Count("pk")),
            judge_jobs_done=_scalar(judge_jobs, "judge_run__pool", v=Sum("done_items")),
            judge_jobs_finished=_scalar(judge_jobs, "judge_run__pool", v=Max("finished_at")),
            job_judge_jobs_n=_scalar(job_judge_jobs, "judge_run__source_job__pools", v=Count("pk")),
            job_judge_jobs_done=_scalar(job_judge_jobs, "judge_run__source_job__pools", v=Sum("done_items")),
            job_judge_jobs_finished=_scalar(job_judge_jobs, "judge_run__source_job__pools", v=Max("finished_at")),
            check_jobs_n=_scalar(check_jobs, "check_run__pool", v=Count("pk")),
            check_jobs_finished=_scalar(check_jobs, "check_run__pool", v=Max("finished_at")),
        )
        .values(
            "pk",
            "name",
            "labels",
            "items_n",
            "items_max",
            "items_at",
            "annotations_n",
            "annotations_max",
            "annotations_at",
            "adjudications_n",
            "adjudications_at",
            "assignments_n",
            "assignments_at",
            "jobs_n",
            "jobs_max",
            "jobs_done",
            "jobs_instances",
            "jobs_finished",
            "jobs_finished_n",
            "jobs_resumes",
            "tango_n",
            "judge_jobs_n",
            "judge_jobs_done",
            "judge_jobs_finished",
            "job_judge_jobs_n",
            "job_judge_jobs_done",
            "job_judge_jobs_finished",
            "check_jobs_n",
            "check_jobs_finished",
        )  # fmt: skip
    )
