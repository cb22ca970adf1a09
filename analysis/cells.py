"""The cell of every per-cell figure (docs/domain.md, 'Aggregates'): model x dataset x setting x pronoun.

`model` is the model's registry name (a pool item's `model_name`), `dataset` the dataset kind (misgendered, ruff,
tango), `setting` pre, post or open, `pronoun` the instance's base pronoun. Every selector that groups by cell, every
export that prints one, and the cell explorer use these names in this order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CELL: list[str] = ["model", "dataset", "setting", "pronoun"]


def cell_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The cell fields of a row, in CELL order."""
    return {key: row[key] for key in CELL}
