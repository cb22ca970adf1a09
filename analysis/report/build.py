"""The whole report of a pool as one JSON-ready dict: its header, then each declared table's rows
(analysis/report/tables/) built from the pool's `ReportInputs`.
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from analysis.report.inputs import ReportInputs
from analysis.report.tables import TABLES
from analysis.selectors import automatic, examples, human, tango
from analysis.selectors import judges as judge_selectors
from analysis.selectors import verdict as verdict_selectors
from annotation.labelset import NO_RATES, positive_label, positive_labels
from annotation.models import STUDY, Pool
from annotation.schema import MISGENDERING
from annotation.selectors.aggregate import AggregationError, pool_aggregates
from common.frames import pd
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
