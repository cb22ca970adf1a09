"""A pool's label set and its positive label (docs/domain.md, "Bring your own study").

Every statistic takes the pool's labels as its categories (a label nobody used is still one). Rates count the
positive label: `misgendering` when the set has it, else the one the pool names.
"""

from __future__ import annotations

import re

from annotation.models import Pool
from annotation.schema import MISGENDERING

LABEL = re.compile(r"^[a-z0-9][a-z0-9_]{0,31}$")


class LabelSetError(ValueError):
    """A label set or positive label that cannot be used; the message says why."""


def labels_check(labels: list[str], positive: str = "") -> list[str]:
    """The label set, checked: at least two distinct labels, each lower-case letters, digits and _ (at most 32),
    and a positive label that is one of them (empty: `misgendering`, which the set must then have); a set with
    `misgendering` counts it, so another positive label is refused there (docs/domain.md, 'Bring your own study')."""
    problems = []
    for label in labels:
        if not isinstance(label, str) or not LABEL.match(label):
            problems.append(f"label {label!r}: use lower-case letters, digits and _ (at most 32)")
    if len(set(labels)) != len(labels):
        problems.append("a label is listed twice")
    if len(set(labels)) < 2:
        problems.append("a label set needs at least two labels")
    if positive and positive not in labels:
        problems.append(f"positive label {positive!r} is not in the set {', '.join(map(str, labels))}")
    elif positive and positive != MISGENDERING and MISGENDERING in labels:
        problems.append(
            f"positive label {positive!r}: a set with {MISGENDERING!r} counts {MISGENDERING!r} (name it or none)"
        )
    if not positive and MISGENDERING not in labels:
        problems.append(
            f"the set has no {MISGENDERING!r}: name the positive label, one of {', '.join(map(str, labels))}"
        )
    if problems:
        raise LabelSetError("; ".join(problems))
    return list(labels)


def positive_label(pool: Pool) -> str | None:
    """The label rates count: `misgendering` when the pool's set has it, else the pool's own; None when neither."""
    if MISGENDERING in pool.labels:
        return MISGENDERING
    return pool.positive_label if pool.positive_label and pool.positive_label in pool.labels else None
