"""The rows of a pool's raw annotation export: one per annotation, with its item, cell and adjudication (a read)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.db.models import Count

from annotation.machine import HUMAN, machine_export_rows
from annotation.models import GOLD, TRAINING, Annotation, ExtraneousSpan, Pool, PoolItem, Referent

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
ROWS_PER_BATCH = 5_000  # annotations read at a time (an item's are never split)
ITEMS_PER_BATCH = 5_000  # item ids named in one query: far below PostgreSQL's 65,535 parameters


def _words(text: str, spans) -> list[str]:
    return [text[start:end] for start, end in spans]


def _distractor_columns(item: PoolItem, referents: list[tuple[int, int, str, str]] | None) -> dict:
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
    verdict = getattr(item, "adjudication", None)
    return {
        "distractors": distractors,
        # The first pronoun may be the other person's: the heuristic is shown beside the human verdict only.
        "heuristic_validity": NOT_VALID_WITH_DISTRACTORS,
        "referents": [[start, end, referent] for start, end, referent, _ in referents or []],
        "referent_words": [word for _, _, _, word in referents or []],
        "adjudicated_referents": verdict.referents if verdict is not None else None,
    }


def _verdict_columns(item: PoolItem) -> dict:
    """The item's adjudication, the same on each of its annotations' rows."""
    verdict = getattr(item, "adjudication", None)
    verdict_spans = verdict.spans if verdict is not None else None
    return {
        "adjudicated_label": verdict.label if verdict is not None else "",
        "adjudicated_extraneous": verdict.extraneous if verdict is not None else None,
        "adjudicated_spans": verdict_spans,
        "adjudicated_span_words": _words(item.continuation, verdict_spans) if verdict_spans is not None else None,
        "adjudication_notes": verdict.notes if verdict is not None else "",
        "adjudicator": verdict.adjudicator.username if verdict is not None and verdict.adjudicator else "",
        "adjudicated_at": verdict.updated_at.isoformat() if verdict is not None else "",
    }


def item_batches(counts: Iterable[tuple[int, int]]) -> Iterator[dict[int, int]]:
    """(item id, number of annotations) pairs, in their order, cut into runs of about ROWS_PER_BATCH annotations (an
    item is never split) and at most ITEMS_PER_BATCH items: what one read of a crowd-sized pool's annotations (and
    their spans) may name at a time."""
    batch: dict[int, int] = {}
    total = 0
    for item_id, n in counts:
        batch[item_id] = n
        total += n
        if total >= ROWS_PER_BATCH or len(batch) >= ITEMS_PER_BATCH:
            yield batch
            batch, total = {}, 0
    if batch:
        yield batch


def _item_batches(pool: Pool) -> Iterator[dict[int, int]]:
    """The pool's annotated items in id order, in runs (`item_batches`)."""
    counts = Annotation.objects.filter(item__pool=pool).values("item_id").annotate(n=Count("id")).order_by("item_id")
    return item_batches(counts.values_list("item_id", "n").iterator(chunk_size=10_000))


def _by_annotation(rows) -> dict[int, list[tuple]]:
    found: dict[int, list[tuple]] = defaultdict(list)
    for annotation_id, *values in rows:
        found[annotation_id].append(tuple(values))
    return found


ANNOTATION_FIELDS = (
    "pk", "item_id", "annotator__username", "label", "extraneous", "notes", "tags", "seconds", "created_at",
    "updated_at", "guideline_version",
)  # fmt: skip


def pool_annotation_rows(*, pool: Pool) -> list[dict]:
    """`pool_annotation_row_stream` as a list (a small pool's rows, for a caller that wants them all at once)."""
    return list(pool_annotation_row_stream(pool=pool))


def pool_annotation_row_stream(*, pool: Pool) -> Iterator[dict]:
    """One row per annotation of the pool (every kind of item), in item order and, within an item, in the order the
    annotations were written (`annotation_order` 1 is the item's first annotator). Columns: `EXPORT_COLUMNS`;
    `spans` are [start, end] character offsets into `continuation`, `span_words` the words they cover. An empty
    `adjudicated_label`, or null adjudicated extraneous flag or spans, means that part was not adjudicated.

    Read a run of items at a time (the items, their annotations as plain tuples, spans and referents: four queries,
    each naming at most ITEMS_PER_BATCH item ids), so that a crowd-sized pool (hundreds of thousands of
    annotations) streams in bounded memory, no query carries more parameters than PostgreSQL takes (65,535), and an
    item's columns are made once for its hundreds of rows."""
    for counts in _item_batches(pool):
        ids = list(counts)
        items = PoolItem.objects.filter(pk__in=ids).select_related("adjudication__adjudicator", "generation__instance")
        columns = {item.pk: (item, _item_columns(pool, item), _verdict_columns(item)) for item in items}
        spans = _by_annotation(
            ExtraneousSpan.objects.filter(annotation__item_id__in=ids)
            .order_by("annotation_id", "start")
            .values_list("annotation_id", "start", "end")
        )
        referents = _by_annotation(
            Referent.objects.filter(annotation__item_id__in=ids)
            .order_by("annotation_id", "start")
            .values_list("annotation_id", "start", "end", "referent", "word")
        )
        annotations = (
            Annotation.objects.filter(item_id__in=ids)
            .order_by("item_id", "created_at", "pk")
            .values_list(*ANNOTATION_FIELDS)
        )
        order: dict[int, int] = defaultdict(int)
        for (
            pk,
            item_id,
            username,
            label,
            extraneous,
            notes,
            tags,
            seconds,
            created_at,
            updated_at,
            version,
        ) in annotations:
            item, head, verdict = columns[item_id]
            order[item_id] += 1
            offsets = [[start, end] for start, end in spans.get(pk, [])]
            yield {
                **head,
                "origin": HUMAN,
                "annotator": username,
                "annotation_order": order[item_id],
                "n_annotations": counts[item_id],
                "label": label,
                "extraneous": extraneous,
                "spans": offsets,
                "span_words": _words(item.continuation, offsets),
                "notes": notes,
                "tags": list(tags),
                "seconds": round(seconds, 3),  # to the millisecond
                "created_at": created_at.isoformat(),
                "updated_at": updated_at.isoformat(),
                "guideline_version": version,
                **verdict,
                **_distractor_columns(item, referents.get(pk)),
            }
    # Machine raters' labels (LLM judges), one row each, from the app that makes them (annotation/machine.py).
    yield from machine_export_rows(pool=pool)


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
