"""The cell of every per-cell figure (docs/domain.md, 'Aggregates'): model x dataset x setting x pronoun.

`model` is the model's registry name (a pool item's `model_name`), `dataset` the dataset kind (misgendered, ruff,
tango), `setting` pre, post or open, `pronoun` the instance's base pronoun. Every selector that groups by cell, every
export that prints one, and the cell explorer use these names in this order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from common.frames import pd

CELL: list[str] = ["model", "dataset", "setting", "pronoun"]


def cell_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The cell fields of a row, in CELL order."""
    return {key: row[key] for key in CELL}


def cell_groups(frame: pd.DataFrame, columns: Sequence[str]) -> list[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """Per cell of `frame`, in the order of pandas' `frame.groupby(CELL, sort=True)` (sorted, rows with a missing
    cell field left out): the cell and its rows' values of `columns` as arrays, in frame order. Every report table
    groups its frame by cell, most of them frames of a few rows, so the rows are grouped in one pass over the cell
    fields' values, not through pandas' grouping, whose setup costs a millisecond however few the rows."""
    if frame.empty:
        return []
    positions: dict[tuple, list[int]] = {}
    for position, key in enumerate(zip(*(frame[field].tolist() for field in CELL), strict=True)):
        positions.setdefault(key, []).append(position)
    values = {column: frame[column].to_numpy() for column in columns}
    return [
        (dict(zip(CELL, key, strict=True)), {column: array[positions[key]] for column, array in values.items()})
        for key in sorted(key for key in positions if not any(pd.isna(field) for field in key))
    ]
