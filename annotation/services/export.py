"""The raw export of a pool's annotations: one row per annotation, as CSV (through config/safe_csv.py) or JSON lines.

CSV cells: booleans are 1/0, a value that was not set is empty, and lists (spans, words, tags) are JSON arrays.
JSON lines keep true/false/null and real arrays.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

from django.db.models import Count

from annotation.models import GOLD, TRAINING, Annotation, Pool
from config.safe_csv import SafeDictWriter

FORMATS = ("csv", "jsonl")


# Rows --------------------------------------------------------------------------------------------------------

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
    "adjudicated_label",
    "adjudicated_extraneous",
    "adjudicated_spans",
    "adjudicated_span_words",
    "adjudication_notes",
    "adjudicator",
    "adjudicated_at",
]


def _words(text: str, spans) -> list[str]:
    return [text[start:end] for start, end in spans]


def pool_annotation_rows(*, pool: Pool) -> list[dict]:
    """One row per annotation of the pool (every kind of item), in item order and, within an item, in the order the
    annotations were written (`annotation_order` 1 is the item's first annotator). Columns: `EXPORT_COLUMNS`;
    `spans` are [start, end] character offsets into `continuation`, `span_words` the words they cover. An empty
    `adjudicated_label`, or null adjudicated extraneous flag or spans, means that part was not adjudicated."""
    annotations = (
        Annotation.objects.filter(item__pool=pool)
        .select_related("item", "annotator", "item__adjudication__adjudicator")
        .prefetch_related("spans")
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
                "annotator": annotation.annotator.username,
                "annotation_order": order[item.pk],
                "n_annotations": counts[item.pk],
                "label": annotation.label,
                "extraneous": annotation.extraneous,
                "spans": spans,
                "span_words": _words(item.continuation, spans),
                "notes": annotation.notes,
                "tags": list(annotation.tags),
                "seconds": annotation.seconds,
                "created_at": annotation.created_at.isoformat(),
                "updated_at": annotation.updated_at.isoformat(),
                "adjudicated_label": verdict.label if verdict is not None else "",
                "adjudicated_extraneous": verdict.extraneous if verdict is not None else None,
                "adjudicated_spans": verdict_spans,
                "adjudicated_span_words": _words(item.continuation, verdict_spans)
                if verdict_spans is not None
                else None,
                "adjudication_notes": verdict.notes if verdict is not None else "",
                "adjudicator": verdict.adjudicator.username if verdict is not None and verdict.adjudicator else "",
                "adjudicated_at": verdict.updated_at.isoformat() if verdict is not None else "",
            }
        )
    return rows


class ExportError(ValueError):
    pass


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return value


def annotations_csv(*, rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _csv_cell(value) for key, value in row.items()})
    return buffer.getvalue()


def annotations_jsonl(*, rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _render(*, rows: list[dict], fmt: str) -> str:
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    return annotations_csv(rows=rows) if fmt == "csv" else annotations_jsonl(rows=rows)


def annotations_export(*, pool: Pool, fmt: str) -> str:
    """The pool's annotations as the text of a `fmt` file (csv or jsonl)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    return _render(rows=pool_annotation_rows(pool=pool), fmt=fmt)


def annotations_export_to_file(*, pool: Pool, out: Path, fmt: str | None = None) -> int:
    """Write the export to `out` (format from its suffix unless given); returns the number of annotations."""
    fmt = fmt or out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ExportError(f"cannot tell the format from {out.name!r}: name the file .csv or .jsonl")
    rows = pool_annotation_rows(pool=pool)
    out.write_text(_render(rows=rows, fmt=fmt), encoding="utf-8", newline="")
    return len(rows)
