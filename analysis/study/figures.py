"""A report's figures, and how two reports' figures are compared (docs/domain.md, 'A study others can check').

A figure is a numeric leaf of the report's JSON: an int or a float (booleans and text are not figures), or null
where the other report has a number there. Its name is its path: keys joined by `.`, and a table's row named in
brackets by the row's short text fields (`human_vs_heuristic[m1/misgendered/pre/xe].agreement`), or by its index when those
do not tell the rows apart. Database ids (`run`, `id`, `item`, `job`, `generation`: a judge run's or an item's key) are
not figures: an import gives rows new keys, and the figures beside them are what must not move. Integers must be equal; floats equal within a relative tolerance of 1e-12
(|a - b| <= 1e-12 * max(1, |a|, |b|)), which allows for a sum's rounding on another machine and nothing more.
"""

from __future__ import annotations

import math
from typing import Any

TOLERANCE = 1e-12
IDENTIFIERS = frozenset({"run", "id", "item", "job", "generation"})
NAME_FIELD_CHARS = 40  # text fields longer than this (a generation, a context) do not name a row


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _row_names(rows: list) -> list[str]:
    names = []
    for index, row in enumerate(rows):
        if isinstance(row, dict):
            text = [v for v in row.values() if isinstance(v, str) and len(v) <= NAME_FIELD_CHARS]
            names.append("/".join(text) if text else str(index))
        else:
            names.append(str(index))
    return names if len(set(names)) == len(names) else [str(i) for i in range(len(rows))]


def figures(report: Any, prefix: str = "") -> dict[str, Any]:
    """Every numeric leaf (and null leaf, which may stand where a number could be) by its path."""
    found: dict[str, Any] = {}
    if isinstance(report, dict):
        for key, value in report.items():
            if key in IDENTIFIERS:
                continue
            found.update(figures(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(report, list):
        for name, value in zip(_row_names(report), report, strict=True):
            found.update(figures(value, f"{prefix}[{name}]"))
    elif _is_number(report) or report is None:
        found[prefix] = report
    return found


def _equal(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def figures_compare(*, bundled: Any, recomputed: Any) -> dict:
    """{"figures": N, "equal": N, "differ": [{"figure", "bundled", "recomputed"}, ...]} over the figures of both
    reports (a path present in one only differs; paths that are null in both are not figures)."""
    left, right = figures(bundled), figures(recomputed)
    paths = [p for p in dict.fromkeys([*left, *right]) if left.get(p) is not None or right.get(p) is not None]
    differ = [
        {"figure": path, "bundled": left.get(path), "recomputed": right.get(path)}
        for path in paths
        if path not in left or path not in right or not _equal(left[path], right[path])
    ]
    return {"figures": len(paths), "equal": len(paths) - len(differ), "differ": differ}
