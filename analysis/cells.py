"""The cell of every per-cell figure (docs/domain.md, 'Aggregates'): model x dataset x setting x pronoun.

`model` is the model's registry name (a pool item's `model_name`), `dataset` the dataset kind (misgendered, ruff,
tango), `setting` pre, post or open, `pronoun` the instance's base pronoun. Every selector that groups by cell, every
export that prints one, and the cell explorer use these names in this order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from common.frames import pd

CELL: list[str] = ["model", "dataset", "setting", "pronoun"]


def cell_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """The cell fields of a row, in CELL order."""
    return {key: row[key] for key in CELL}


# Up to this many rows a frame is grouped by cell in Python; pandas' grouping costs about a millisecond even on a few
# rows, Python's grows with the rows and passes it at a few thousand (benchmarks/bench_grouping.py).
PYTHON_GROUPING_ROWS = 2000


def cell_groups(frame: pd.DataFrame, columns: Sequence[str]) -> list[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """Per cell of `frame`, in the order of pandas' `frame.groupby(CELL, sort=True)` (sorted, rows with a missing
    cell field left out): the cell and its rows' values of `columns` as arrays, in frame order.

    A report groups a dozen small frames: up to PYTHON_GROUPING_ROWS rows, the rows are grouped in one pass of Python;
    larger frames (a paper-scale study's instances) by pandas' own grouping."""
    if frame.empty:
        return []
    positions: dict[tuple, Any]
    if len(frame) > PYTHON_GROUPING_ROWS:
        positions = frame.groupby(CELL, sort=True).indices
    else:
        positions = {}
        for position, key in enumerate(zip(*(frame[field].tolist() for field in CELL), strict=True)):
            if not any(value is None or (isinstance(value, float) and math.isnan(value)) for value in key):
                positions.setdefault(key, []).append(position)
    values = {column: frame[column].to_numpy() for column in columns}
    return [
        (dict(zip(CELL, key, strict=True)), {column: array[positions[key]] for column, array in values.items()})
        for key in sorted(positions)
    ]
