"""The rows of a pool's raw annotation export: one per annotation, with its item, cell and adjudication (a read)."""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count

from annotation.machine import HUMAN, machine_export_rows
from annotation.models import GOLD, TRAINING, Annotation, Pool, PoolItem

EXPORT_COLUMNS = [
    "pool",
    "item_id",
    "item_kind",
    "is_gold",
    "is_training",
    "gold_label",
    "gold_extraneous",
    "model",
    "dataset",
    "setting",
    "pronoun",
    "sample_index",
    "context",
    "continuation",
    "heuristic_correct",
    "first_pronoun",
    "origin",
    "annotator",
    "annotation_order",
    "n_annotations",
    "label",
    "extraneous",
    "spans",
    "span_words",
    "notes",
    "tags",
    "seconds",
    "created_at",
    "updated_at",
    "guideline_version",
    "adjudicated_label",
    "adjudicated_extraneous",
    "adjudicated_spans",
    "adjudicated_span_words",
    "adjudication_notes",
    "adjudicator",
    "adjudicated_at",
    # RUFF with distractors (docs/domain.md, 'RUFF with distractors'): empty on every other item.
    "distractors",
    "heuristic_validity",
    "referents",
    "referent_words",
    "adjudicated_referents",
]
NOT_VALID_WITH_DISTRACTORS = "not valid with distractors"


def _words(text: str, spans) -> list[str]:
    return [text[start:end] for start, end in spans]


def _distractor_columns(item: PoolItem, annotation: Annotation, verdict) -> dict:
    """The distractor count, the heuristic's standing, and the referents as [start, end, referent] (code points
    into `continuation`) with their words; nothing for an item without distractors."""
    distractors = item.generation.instance.distractors if item.generation is not None else None
    if distractors is None:
        return {
            "distractors": None,
            "heuristic_validity": "",
            "referents": None,
            "referent_words": None,
            "adjudicated_referents": None,
        }
    referents = [[r.start, r.end, r.referent] for r in annotation.referents.all()]
    return {
        "distractors": distractors,
        # The first pronoun may be the other person's: the heuristic is shown beside the human verdict only.
        "heuristic_validity": NOT_VALID_WITH_DISTRACTORS,
        "referents": referents,
        "referent_words": [r.word for r in annotation.referents.all()],
        "adjudicated_referents": verdict.referents if verdict is not None else None,
    }


def pool_annotation_rows(*, pool: Pool) -> list[dict]:
    """One row per annotation of the pool (every kind of item), in item order and, within an item, in the order the
    annotations were written (`annotation_order` 1 is the item's first annotator). Columns: `EXPORT_COLUMNS`;
    `spans` are [start, end] character offsets into `continuation`, `span_words` the words they cover. An empty
    `adjudicated_label`, or null adjudicated extraneous flag or spans, means that part was not adjudicated."""
    annotations = (
        Annotation.objects.filter(item__pool=pool)
        .select_related("item", "annotator", "item__adjudication__adjudicator", "item__generation__instance")
        .prefetch_related("spans", "referents")
        .order_by("item_id", "created_at", "pk")
    )
    counts = dict(
        Annotation.objects.filter(item__pool=pool).values("item_id").annotate(n=Count("id")).values_list("item_id", "n")
    )
    rows = []
    order: dict[int, int] = defaultdict(int)
    for annotation in annotations:
        item = annotation.item
        order[item.pk] += 1
        spans = [[span.start, span.end] for span in annotation.spans.all()]
        verdict = getattr(item, "adjudication", None)
        verdict_spans = verdict.spans if verdict is not None else None
        rows.append(
            {
                **_item_columns(pool, item),
                "origin": HUMAN,
                "annotator": annotation.annotator.username,
                "annotation_order": order[item.pk],
                "n_annotations": counts[item.pk],
                "label": annotation.label,
                "extraneous": annotation.extraneous,
                "spans": spans,
                "span_words": _words(item.continuation, spans),
                "notes": annotation.notes,
                "tags": list(annotation.tags),
                "seconds": round(annotation.seconds, 3),  # to the millisecond
                "created_at": annotation.created_at.isoformat(),
                "updated_at": annotation.updated_at.isoformat(),
                "guideline_version": annotation.guideline_version,
                "adjudicated_label": verdict.label if verdict is not None else "",
                "adjudicated_extraneous": verdict.extraneous if verdict is not None else None,
                "adjudicated_spans": verdict_spans,
                "adjudicated_span_words": _words(item.continuation, verdict_spans)
                if verdict_spans is not None
                else None,
                "adjudication_notes": verdict.notes if verdict is not None else "",
                "adjudicator": verdict.adjudicator.username if verdict is not None and verdict.adjudicator else "",
                "adjudicated_at": verdict.updated_at.isoformat() if verdict is not None else "",
                **_distractor_columns(item, annotation, verdict),
            }
        )
    # Machine raters' labels (LLM judges), one row each, from the app that makes them (annotation/machine.py).
    rows.extend(machine_export_rows(pool=pool))
    return rows


def _item_columns(pool: Pool, item: PoolItem) -> dict:
    """The item's own columns, the same on a human's row and on a machine rater's."""
    return {
        "pool": pool.name,
        "item_id": item.public_id,
        "item_kind": item.kind,
        "is_gold": item.kind == GOLD,
        "is_training": item.kind == TRAINING,
        "gold_label": item.gold_label,
        "gold_extraneous": item.gold_extraneous,
        "model": item.model_name,
        "dataset": item.dataset,
        "setting": item.setting,
        "pronoun": item.pronoun,
        "sample_index": item.sample_index,
        "context": item.context,
        "continuation": item.continuation,
        "heuristic_correct": item.heuristic_correct,
        "first_pronoun": item.first_pronoun,
    }


def machine_export_row(*, pool: Pool, item: PoolItem, origin: str, label: str, notes: str = "") -> dict:
    """An export row for a machine rater's label of an item: the item's columns, the origin (also in `annotator`),
    the label; the human-only columns stay empty."""
    row = dict.fromkeys(EXPORT_COLUMNS)
    row.update(
        {
            **_item_columns(pool, item),
            "origin": origin,
            "annotator": origin,
            "label": label,
            "notes": notes,
        }
    )
    return row
