"""The whole report of a pool as one JSON-ready dict.

The report is a list of sections: `SECTIONS` maps each report key to the function that builds it from the pool's
`ReportInputs`. A new figure is one line there; the exports, the page and the API pick every section up (each section
but `inter_annotator` is a table of rows, one CSV each).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd
from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery, Sum

from analysis.cells import CELL
from analysis.selectors import automatic, examples, explorer, human, quality, rankings, tango
from analysis.selectors import distractors as distractor_selectors
from analysis.selectors import judges as judge_selectors
from analysis.selectors import verdict as verdict_selectors
from annotation.models import STUDY, Adjudication, Annotation, Assignment, Pool, PoolItem
from annotation.selectors.aggregate import AggregationError, pool_aggregates
from generation.models import GenerationJob
from generation.models.tango import TangoTemplate


@dataclass(frozen=True)
class ReportInputs:
    """What the sections read, loaded once per report: the human frame (annotated study items, one row each), the
    automatic frame (one row per job x instance x setting), the pool's jobs and the examples' seed."""

    pool: Pool
    labels: list[str]
    frame: pd.DataFrame
    job_ids: list[int]
    instances: pd.DataFrame
    examples_seed: int
    tango: pd.DataFrame | None = None  # one row per TANGO generation with its Prob-TANGO verdict (selectors/tango.py)
    aggregates: list[dict] | None = None  # per item: majority, Dawid-Skene, MACE (annotation/selectors/aggregate.py)
    judges: pd.DataFrame | None = None  # one row per judge x judged study item (selectors/judges.py)
    verdict: verdict_selectors.VerdictParameters = verdict_selectors.VerdictParameters()  # epsilon, alpha, delta

    @cached_property
    def accuracy(self) -> list[dict]:
        """The `accuracy` rows, built once: the rankings across benchmarks read them too."""
        return _accuracy(self)


SECTIONS: dict[str, Callable[[ReportInputs], Any]] = {
    "inter_annotator": lambda r: human.inter_annotator(frame=r.frame, labels=r.labels),
    "human_vs_heuristic": lambda r: human.human_vs_heuristic(frame=r.frame),
    "label_distribution": lambda r: human.label_distribution(frame=r.frame, labels=r.labels),
    "extraneous_rate": lambda r: human.extraneous_rate(frame=r.frame),
    "prob_vs_gen": lambda r: automatic.prob_vs_gen(frame=r.instances) + tango.tango_prob_vs_gen(frame=r.tango),
    "instance_variation": lambda r: automatic.instance_variation(frame=r.instances),
    "beta_disagreement": lambda r: (
        automatic.beta_disagreement(frame=r.instances) + tango.tango_beta_disagreement(frame=r.tango)
    ),
    "tango_failure_rate": lambda r: tango.tango_failure_rate(frame=r.tango),
    "tango_variation": lambda r: tango.tango_variation(frame=r.tango),
    "repetition": lambda r: automatic.repetition(job_ids=r.job_ids),
    "accuracy": lambda r: r.accuracy,
    "conflict_rate": lambda r: automatic.conflict_rate(frame=r.instances, tango=r.tango),
    "disagreements": lambda r: human.disagreements(frame=r.frame),
    "examples": lambda r: examples.examples(frame=r.frame, seed=r.examples_seed),
    "annotator_quality": lambda r: quality.annotator_quality(pool=r.pool),
    # Machine raters (LLM judges): their own rows, never mixed into the human figures above.
    "human_vs_judge": lambda r: judge_selectors.human_vs_judge(frame=r.judges),
    "judge_vs_heuristic": lambda r: judge_selectors.judge_vs_heuristic(frame=r.judges),
    "judge_calibration": lambda r: judge_selectors.judge_calibration(frame=r.judges),
    "judge_reliability": lambda r: judge_selectors.judge_reliability(frame=r.judges),
    # The judge's verdict: may it replace the annotators, and the rates once it labels everything.
    "judge_verdict": lambda r: verdict_selectors.judge_verdict(
        pool=r.pool, frame=r.frame, labels=r.labels, parameters=r.verdict
    ),
    "prediction_powered": lambda r: verdict_selectors.prediction_powered(pool=r.pool, frame=r.frame),
    "aggregates": lambda r: r.aggregates or [],
    # RUFF with distractors: accuracy against the distractor count (the heuristic marked not valid there).
    "distractors": lambda r: distractor_selectors.distractors(frame=r.frame),
    # Do datasets and methods rank the models alike? Kendall's tau per pair of (dataset, method).
    "ranking_agreement": lambda r: rankings.ranking_agreement(accuracy=r.accuracy),
    # Guidelines edited mid-study: human vs heuristic per guideline version (empty while there is one version).
    "by_guideline_version": lambda r: human.by_guideline_version(pool=r.pool),
}


def _accuracy(r: ReportInputs) -> list[dict]:  # noqa: F821 (defined above, read when called)
    """Accuracy per cell, whose `n` counts a cell's instances as the cell explorer does: a cell with no job
    instances (an imported pool) counts one instance per template of its study items."""
    rows = automatic.accuracy(frame=r.instances, human_frame=r.frame, tango=r.tango)
    if any(row["n"] == 0 for row in rows):
        counted = {tuple(cell[c] for c in CELL): cell["instances"] for cell in explorer.pool_cells(pool=r.pool)}
        for row in rows:
            if row["n"] == 0:
                row["n"] = counted.get(tuple(row[c] for c in CELL), 0)
    return rows


# The per-cell tables (rows carrying model, dataset, setting, pronoun), in the order the report shows them.
TABLES = [
    "human_vs_heuristic",
    "label_distribution",
    "extraneous_rate",
    "prob_vs_gen",
    "instance_variation",
    "beta_disagreement",
    "tango_failure_rate",
    "tango_variation",
    "repetition",
    "accuracy",
    "annotator_quality",
]


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
    `analysis.services.repetition_rates_fill` keeps; `report_build` fills it first. Only study items count
    (gold and training items never enter a metric). `human_verdict` picks the human label that the heuristic and the
    accuracies are compared with (`human.HUMAN_VERDICTS`; None: the default rule); it raises ValueError for an
    unknown one and AggregationError for an aggregate of a pool with no item rated twice."""
    labels = list(pool.labels)
    frame = human.pool_item_frame(pool=pool)
    aggregates = _aggregates(pool=pool, frame=frame)
    frame = human.frame_with_human_verdict(frame=frame, human=human_verdict, aggregates=aggregates)
    job_ids = automatic.pool_job_ids(pool=pool)
    inputs = ReportInputs(
        pool=pool,
        labels=labels,
        frame=frame,
        job_ids=job_ids,
        instances=automatic.instance_frame(job_ids=job_ids),
        examples_seed=examples_seed,
        tango=tango.tango_frame(job_ids=job_ids),
        judges=judge_selectors.judge_frame(pool=pool, human=frame),
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
        **{key: build(inputs) for key, build in SECTIONS.items()},
    }


# Bump when a change to the report's code changes its output, so that a shared cache (Redis) drops old reports.
REPORT_FORMAT = 3


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
    outer = OuterRef("pk")
    items = PoolItem.objects.filter(pool=outer)
    annotations = Annotation.objects.filter(item__pool=outer)
    adjudications = Adjudication.objects.filter(item__pool=outer)
    assignments = Assignment.objects.filter(pool=outer)
    jobs = GenerationJob.objects.filter(pools=outer)
    tango_rows = TangoTemplate.objects.filter(job__pools=outer)
    judge_jobs = GenerationJob.objects.filter(judge_run__pool=outer)  # LLM judges' runs (judging)
    # Judge runs over the pool's generation jobs count for the pool too.
    job_judge_jobs = GenerationJob.objects.filter(judge_run__source_job__pools=outer)
    row = (
        Pool.objects.filter(pk=pool.pk)
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
        )  # fmt: skip
        .get()
    )
    text = json.dumps([REPORT_FORMAT, row], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]
