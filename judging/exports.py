"""A run's machine labels as a file: CSV (through common/safe_csv.py) or JSON lines.

CSV cells: `options` is a JSON object (label -> option text); a missing score is empty. JSON lines keep numbers,
nulls and the options object as they are.
"""

from __future__ import annotations

import io
import json

from common.safe_csv import SafeDictWriter
from judging.models import JudgeRun
from judging.selectors import generation_label_columns, generation_label_rows, label_rows

FORMATS = ("csv", "jsonl")
BASE_COLUMNS = ["item", "origin", "judge", "version", "mode", "label", "confidence", "prompt", "options"]


def label_columns(*, run: JudgeRun) -> list[str]:
    return BASE_COLUMNS + [f"score_{label}" for label in run.judge.option_map]


def labels_export(*, run: JudgeRun, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    rows = label_rows(run=run)
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=label_columns(run=run), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        cells = {key: ("" if value is None else value) for key, value in row.items()}
        cells["options"] = json.dumps(row["options"], ensure_ascii=False)
        writer.writerow(cells)
    return buffer.getvalue()


def generation_labels_export(*, run: JudgeRun, fmt: str, pool=None) -> str:
    """A run's labels one row per judged generation (a pool run: per item), as `export_judge_labels` writes them:
    generation, model, dataset, setting, pronoun, context, sample_index, item, label, confidence, prob_<label>,
    score_<label>. A missing value is empty in CSV and null in JSON lines."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    rows = generation_label_rows(run=run, pool=pool)
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=generation_label_columns(run=run), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: ("" if value is None else value) for key, value in row.items()})
    return buffer.getvalue()
