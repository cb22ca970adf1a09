"""A pool's label set, its scale and its positive label (docs/domain.md, "Bring your own study" and "Scales").

Every statistic takes the pool's labels as its categories (a label nobody used is still one). A label is any text of
at most 64 characters, kept and shown as written; `label_key` derives the key that URLs and column names use. Rates
count the positive label: `misgendering` when the set has it, else the one the pool names; on an ordinal or interval
pool they may instead count every label at or above a threshold. A pool without either has no rates, and its rates
tables say how to get them.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

from annotation.models import INTERVAL, NOMINAL, ORDINAL, Pool
from annotation.schema import MISGENDERING

LABEL_MAX = 64
SCALES = (NOMINAL, ORDINAL, INTERVAL)


class LabelSetError(ValueError):
    """A label set or positive label that cannot be used; the message says why."""


def _label_problem(label: object) -> str | None:
    if not isinstance(label, str):
        return f"label {label!r}: must be text"
    if not label.strip():
        return "a label is empty"
    if label != label.strip():
        return f"label {label!r}: starts or ends with a space"
    if len(label) > LABEL_MAX:
        return f"label {label!r}: longer than {LABEL_MAX} characters"
    if any(unicodedata.category(character).startswith("C") for character in label):
        return f"label {label!r}: holds a control character"
    return None


def label_value(label: str) -> float | None:
    """An interval label's number (None: not a finite number)."""
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def labels_check(
    labels: list[str], positive: str = "", *, scale: str = NOMINAL, positive_at_least: str = ""
) -> list[str]:
    """The label set, checked: at least two distinct labels, each any text of at most 64 characters (no control
    characters, no leading or trailing space); on an interval scale each a number; a positive label, when given, one
    of them (a set with `misgendering` counts it, so another is refused there); a threshold only on an ordinal or
    interval scale, and one of the labels. Neither is needed: without them the pool has no rates."""
    problems = []
    if scale not in SCALES:
        problems.append(f"scale {scale!r}: use one of {', '.join(SCALES)}")
    for label in labels:
        if problem := _label_problem(label):
            problems.append(problem)
        elif scale == INTERVAL and label_value(label) is None:
            problems.append(f"label {label!r}: an interval scale's labels are numbers")
    if len(set(labels)) != len(labels):
        problems.append("a label is listed twice")
    if len(set(labels)) < 2:
        problems.append("a label set needs at least two labels")
    problems += _positive_problems(labels, positive, scale, positive_at_least)
    if problems:
        raise LabelSetError("; ".join(problems))
    return list(labels)


def _positive_problems(labels: list[str], positive: str, scale: str, positive_at_least: str) -> list[str]:
    problems = []
    if positive and positive not in labels:
        problems.append(f"positive label {positive!r} is not in the set {', '.join(map(str, labels))}")
    elif positive and positive != MISGENDERING and MISGENDERING in labels:
        problems.append(
            f"positive label {positive!r}: a set with {MISGENDERING!r} counts {MISGENDERING!r} (name it or none)"
        )
    if positive_at_least:
        if scale == NOMINAL:
            problems.append("a positive threshold needs an ordinal or interval scale")
        elif positive_at_least not in labels:
            problems.append(f"positive threshold {positive_at_least!r} is not in the set {', '.join(map(str, labels))}")
        elif positive:
            problems.append("name a positive label or a threshold, not both")
    return problems


def ordered_labels(labels: list[str], scale: str) -> list[str]:
    """The labels in the scale's order: as declared (nominal, ordinal), by value (interval)."""
    if scale == INTERVAL:
        return sorted(labels, key=lambda label: label_value(label) or 0.0)
    return list(labels)


def positive_label(pool: Pool) -> str | None:
    """The label rates count: `misgendering` when the pool's set has it, else the pool's own; None when neither."""
    if MISGENDERING in pool.labels:
        return MISGENDERING
    return pool.positive_label if pool.positive_label and pool.positive_label in pool.labels else None


def positive_labels(pool: Pool) -> set[str]:
    """Every label rates count: the positive label, or on an ordinal or interval pool with a threshold, each label at
    or above it in the scale's order; empty when the pool has neither."""
    single = positive_label(pool)
    if single is not None:
        return {single}
    threshold = pool.positive_at_least
    if pool.scale == NOMINAL or not threshold or threshold not in pool.labels:
        return set()
    order = ordered_labels(list(pool.labels), pool.scale)
    return set(order[order.index(threshold) :])


def rate_positive(pool: Pool) -> str | frozenset[str] | None:
    """What the pool's rates count: its positive label, else (an ordinal or interval pool with a threshold) the labels
    at or above the threshold, which `analysis.selectors.verdict.HumanSide.positive` reads as "the item's human
    value is at or above the threshold's"; None: the pool has no rates."""
    return positive_label(pool) or frozenset(positive_labels(pool)) or None


NO_RATES = (
    "no rates: the pool's labels have no misgendering and it names no positive label; import with --positive LABEL "
    "(or, on an ordinal or interval pool, --positive-at-least LABEL)"
)


def label_key(label: str) -> str:
    """The key of a label in URLs and column names: lower-case ASCII letters, digits and _ (a label such as
    "Not misgendering" gives `not_misgendering`); a label with none of those gives `label_` and its code points."""
    ascii_text = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode()
    key = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")
    return key or "label_" + "_".join(f"{ord(character):x}" for character in label)[:58]


def label_keys(labels: Sequence[object], *, reserved: Sequence[str] = ()) -> dict[str, str]:
    """Each label (as text) -> its key (`label_key`), in order; a label whose key an earlier one, or a column of its
    own (`reserved`: a table's `n`), took gets `_2`, `_3`, ... after it ("Good" and "good!" are `good` and
    `good_2`), so that each column is one label's."""
    keys: dict[str, str] = {}
    taken: set[str] = set(reserved)
    for label in map(str, labels):
        if label in keys:
            continue
        key, number = label_key(label), 1
        while key in taken:
            number += 1
            key = f"{label_key(label)}_{number}"
        keys[label] = key
        taken.add(key)
    return keys
