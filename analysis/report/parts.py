"""The flat rows of the report's tables, as the CSV files and the page's tables hold them: nested figures flattened
(an interval `<key>_low`/`<key>_high`, a dict `<key>_<subkey>`), and the tables drawn from a part of another table
(the inter-annotator views, the judge's verdict's agreement rows and annotators). Each table's declaration
(analysis/report/tables/) names its function here when it is not one flat row per row of its own."""

from __future__ import annotations

import math
from typing import Any

from annotation.labelset import label_keys
from annotation.schema import label_display

# The views of the inter-annotator table, in the order every table of it gives them.
INTER_ANNOTATOR_VIEWS = {
    "pronoun_label": "pronoun label",
    "pronoun_binary": "misgendering or not",
    "extraneous": "extraneous flag",
}


# The columns beside a label's own in the tables with a column per label (a label "n" is named `n_2` there).
LABEL_RESERVED = ("model", "dataset", "setting", "pronoun", "n", "first_annotator")


def label_titles(report: dict) -> dict[str, str]:
    """The title of each column named by a label's key (`annotation.labelset.label_keys`): the label as written
    (docs/domain.md, "Scales": labels as written); the per-class kappas' columns too."""
    labels = [str(label) for label in report.get("labels") or []]
    confusion = ((report.get("inter_annotator") or {}).get("confusion") or {}).get("labels") or []
    labels += [str(label) for label in confusion if str(label) not in labels]
    titles = {key: label_display(label) for label, key in label_keys(labels, reserved=LABEL_RESERVED).items()}
    for label, key in label_keys(labels).items():
        titles[f"per_class_kappa_{key}"] = f"per class kappa {label_display(label)}"
        titles[f"per_class_kappa_boot_ci_{key}"] = f"per class kappa boot ci {label_display(label)}"
    return titles


def label_text(label: object) -> str:
    """A label as people read it: `no_pronoun` -> `no pronoun` (the stored value keeps its underscore)."""
    return str(label).replace("_", " ")


def clean(value):
    """NaN and infinities out of the JSON (as null), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def flatten(row: Any) -> dict:
    """CSV columns: [low, high] intervals become `<key>_low`/`<key>_high`, dicts `<key>_<subkey>` (dicts of
    intervals `<key>_<subkey>_low`/`_high`)."""
    flat: dict = {}
    for key, value in row.items():
        if isinstance(value, dict):
            for sub, inner in value.items():
                if key.endswith("_ci"):  # an interval per label: `<key>_<label>_low`/`_high`
                    low, high = inner if inner else (None, None)
                    flat[f"{key}_{sub}_low"], flat[f"{key}_{sub}_high"] = low, high
                else:
                    flat[f"{key}_{sub}"] = inner
        elif key.endswith("_ci"):
            low, high = value if value else (None, None)
            flat[f"{key}_low"], flat[f"{key}_high"] = low, high
        else:
            flat[key] = value
    return flat


def inter_annotator_views(report: dict) -> list:
    """The three views' agreement blocks (3-way label, binary label, extraneous flag)."""
    return [report["inter_annotator"][m] for m in INTER_ANNOTATOR_VIEWS]


def inter_annotator_rows(report: dict) -> list[dict]:
    inter = report["inter_annotator"]
    return [
        {"measure": m, **flatten({k: v for k, v in inter[m].items() if k != "pairwise"})} for m in INTER_ANNOTATOR_VIEWS
    ]


def pairwise(report: dict) -> list:
    return [row for m in INTER_ANNOTATOR_VIEWS for row in report["inter_annotator"][m].get("pairwise", [])]


def pairwise_note(report: dict) -> str | None:
    """Why the pairs are not listed (a pool of more raters than are listed), from a report that says so."""
    inter = report.get("inter_annotator") or {}
    return next(
        (inter[m]["pairwise_note"] for m in INTER_ANNOTATOR_VIEWS if (inter.get(m) or {}).get("pairwise_note")), None
    )


def pairwise_rows(report: dict) -> list[dict]:
    """Cohen's kappa per annotator pair, for every view."""
    inter = report["inter_annotator"]
    return [{"measure": m, **flatten(row)} for m in INTER_ANNOTATOR_VIEWS for row in inter[m].get("pairwise", [])]


def confusion(report: dict) -> list:
    return [report["inter_annotator"]["confusion"]]


def confusion_rows(report: dict) -> list[dict]:
    confusion = report["inter_annotator"]["confusion"]
    labels = confusion["labels"]
    # The columns are named by the labels' keys, their titles the labels as written (`label_titles`).
    keys = list(label_keys(labels, reserved=LABEL_RESERVED).values())
    return [
        {"first_annotator": label, **dict(zip(keys, counts, strict=True))}
        for label, counts in zip(labels, confusion["matrix"], strict=True)
    ]


def annotator_pairs(report: dict) -> list:
    return report["inter_annotator"]["annotator_pairs"]


def annotator_pairs_rows(report: dict) -> list[dict]:
    return list(report["inter_annotator"]["annotator_pairs"])


def judge_verdict_rows(report: dict) -> list[dict]:
    """One row per run: the Alt-Test's figures, omega per epsilon and the selective threshold (the risk-coverage
    curve stays in the JSON)."""
    rows: list[dict] = []
    for row in report.get("judge_verdict") or []:
        test = row["alt_test"]
        rows.append(
            {
                "judge": row["judge"],
                "run": row["run"],
                "version": row["version"],
                "epsilon": row["epsilon"],
                "q": row["q"],
                "n_ties": row["n_ties"],
                **{key: test[key] for key in ("omega", "rho", "passed", "tested")},
                "skipped": ";".join(test["skipped"]),
                "note": test["note"] or "",
                **{f"omega_{key}": value for key, value in test["omega_by_epsilon"].items()},
                **{f"selective_{key}": value for key, value in row["selective"].items() if key != "curve"},
            }
        )
    return rows


def judge_verdict_agreement(report: dict) -> list:
    return [agreement for row in report.get("judge_verdict") or [] for agreement in row["agreement"]]


def judge_verdict_agreement_rows(report: dict) -> list[dict]:
    """The judge's agreement rows, each with its judge and run."""
    return [
        {"judge": row["judge"], "run": row["run"], **flatten(agreement)}
        for row in report.get("judge_verdict") or []
        for agreement in row["agreement"]
    ]


def judge_verdict_annotators(report: dict) -> list:
    return [annotator for row in report.get("judge_verdict") or [] for annotator in row["alt_test"]["annotators"]]


def judge_verdict_annotators_rows(report: dict) -> list[dict]:
    """The Alt-Test's annotators, each with its judge and run."""
    return [
        {"judge": row["judge"], "run": row["run"], **annotator}
        for row in report.get("judge_verdict") or []
        for annotator in row["alt_test"]["annotators"]
    ]
