"""The whole report of a pool as one JSON-ready dict (keys as in issue 5)."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from analysis.selectors import automatic, human
from annotation.models import Pool

TABLES = [
    "human_vs_heuristic",
    "label_distribution",
    "extraneous_rate",
    "prob_vs_gen",
    "instance_variation",
    "beta_disagreement",
    "repetition",
]


def pool_list_for_reports() -> QuerySet[Pool]:
    return Pool.objects.annotate(n_items=Count("items", distinct=True), n_jobs=Count("jobs", distinct=True)).order_by(
        "name"
    )


def report_data(*, pool: Pool) -> dict:
    """Every figure of the report. Repetition rates are read from the cache that
    `analysis.services.repetition_rates_fill` keeps; `report_build` fills it first."""
    labels = list(pool.labels)
    frame = human.pool_item_frame(pool=pool)
    job_ids = automatic.pool_job_ids(pool=pool)
    instances = automatic.instance_frame(job_ids=job_ids)
    return {
        "pool": pool.name,
        "labels": labels,
        "n_items": pool.items.count(),
        "n_annotated": int(len(frame)),
        "inter_annotator": human.inter_annotator(frame=frame, labels=labels),
        "human_vs_heuristic": human.human_vs_heuristic(frame=frame),
        "label_distribution": human.label_distribution(frame=frame, labels=labels),
        "extraneous_rate": human.extraneous_rate(frame=frame),
        "prob_vs_gen": automatic.prob_vs_gen(frame=instances),
        "instance_variation": automatic.instance_variation(frame=instances),
        "beta_disagreement": automatic.beta_disagreement(frame=instances),
        "repetition": automatic.repetition(job_ids=job_ids),
        "disagreements": human.disagreements(frame=frame),
    }
