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
from typing import Any

import pandas as pd
from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery, Sum

from analysis.selectors import automatic, examples, human, quality, tango
from annotation.models import STUDY, Adjudication, Annotation, Assignment, Pool, PoolItem
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
    "accuracy": lambda r: automatic.accuracy(frame=r.instances, human_frame=r.frame, tango=r.tango),
    "conflict_rate": lambda r: automatic.conflict_rate(frame=r.instances, tango=r.tango),
    "disagreements": lambda r: human.disagreements(frame=r.frame),
    "examples": lambda r: examples.examples(frame=r.frame, seed=r.examples_seed),
    "annotator_quality": lambda r: quality.annotator_quality(pool=r.pool),
}

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


def report_data(*, pool: Pool, examples_seed: int = examples.EXAMPLES_SEED) -> dict:
    """Every figure of the report. Repetition rates are read from the cache that
    `analysis.services.repetition_rates_fill` keeps; `report_build` fills it first. Only study items count
    (gold and training items never enter a metric)."""
    labels = list(pool.labels)
    frame = human.pool_item_frame(pool=pool)
    job_ids = automatic.pool_job_ids(pool=pool)
    inputs = ReportInputs(
        pool=pool,
        labels=labels,
        frame=frame,
        job_ids=job_ids,
        instances=automatic.instance_frame(job_ids=job_ids),
        examples_seed=examples_seed,
        tango=tango.tango_frame(job_ids=job_ids),
    )
    return {
        "pool": pool.name,
        "labels": labels,
        "n_items": pool.items.filter(kind=STUDY).count(),
        "n_annotated": int(len(frame)),
        "examples_seed": examples_seed,
        **{key: build(inputs) for key, build in SECTIONS.items()},
    }


# Bump when a change to the report's code changes its output, so that a shared cache (Redis) drops old reports.
REPORT_FORMAT = 1


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
            jobs_done=_scalar(jobs, "pools", v=Sum("done_generations")),
            jobs_instances=_scalar(jobs, "pools", v=Sum("done_instances")),
            jobs_finished=_scalar(jobs, "pools", v=Max("finished_at")),
            jobs_finished_n=_scalar(jobs, "pools", v=Count("finished_at")),
            jobs_resumes=_scalar(jobs, "pools", v=Sum("resumes")),
            tango_n=_scalar(tango_rows, "job__pools", v=Count("pk")),
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
        )  # fmt: skip
        .get()
    )
    text = json.dumps([REPORT_FORMAT, row], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]
