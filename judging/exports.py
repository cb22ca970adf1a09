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


CHECK_COLUMNS = {"position": "rotation", "family_swap": "target_family", "contextual": "probe"}
PROBE_TEXT = {"original": None, "n/a": "N/A", "empty": "", "mask": "[MASK]"}


def check_label_rows(*, run) -> list[dict]:
    """One row per item and variant of a check run (judging/checks.py), in item order: `item` (the public id),
    `judge`, `version`, `check`, `mode`, then the variant as `rotation` (position: 0 is the judge's own order),
    `target_family` (family swap: the item's own family for the original) or `probe` (contextual: the text put in
    place of the generation, null for the item itself), `label`, `confidence`, `prompt`, `options` (label -> option
    text in the order shown) and `score_<label>` per option."""
    from judging.models import CheckLabel

    column = CHECK_COLUMNS[run.kind]
    rows = []
    for label in CheckLabel.objects.filter(run=run).select_related("item").order_by("item_id", "id"):
        if run.kind == "position":
            variant: object = int(label.variant)
        elif run.kind == "family_swap":
            variant = label.item.pronoun if label.variant == "original" else label.variant
        else:
            variant = PROBE_TEXT.get(label.variant, label.variant)
        rows.append(
            {
                "item": label.item.public_id, "judge": run.judge.name, "version": run.judge.version,
                "check": run.kind, "mode": run.mode, column: variant, "label": label.label,
                "confidence": label.confidence, "prompt": label.prompt, "options": dict(label.options),
                **{f"score_{key}": label.scores.get(key) for key in run.judge.option_map},
            }
        )  # fmt: skip
    return rows


def check_labels_export(*, run, fmt: str) -> str:
    """A check run's labels as CSV or JSON lines (`check_label_rows`)."""
    columns = ["item", "judge", "version", "check", "mode", CHECK_COLUMNS[run.kind], "label", "confidence", "prompt",
               "options"] + [f"score_{label}" for label in run.judge.option_map]  # fmt: skip
    return _write(check_label_rows(run=run), columns=columns, fmt=fmt)
