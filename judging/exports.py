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


def _write(rows: list[dict], *, columns: list[str], fmt: str) -> str:
    """Rows as JSON lines or spreadsheet-safe CSV (a missing value empty; a list or object cell as JSON)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                key: ""
                if value is None
                else json.dumps(value, ensure_ascii=False)
                if isinstance(value, list | dict)
                else value
                for key, value in row.items()
            }
        )
    return buffer.getvalue()


def labels_export(*, run: JudgeRun, fmt: str) -> str:
    return _write(label_rows(run=run), columns=label_columns(run=run), fmt=fmt)


def generation_labels_export(*, run: JudgeRun, fmt: str, pool=None, pools=None) -> str:
    """A run's labels one row per judged generation (a pool run: per item), as `export_judge_labels` writes them:
    generation, model, dataset, setting, pronoun, context, sample_index, item, label, confidence, prob_<label>,
    score_<label>. A missing value is empty in CSV and null in JSON lines."""
    return _write(
        generation_label_rows(run=run, pool=pool, pools=pools), columns=generation_label_columns(run=run), fmt=fmt
    )
