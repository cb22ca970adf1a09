"""`analysis.cells.cell_groups` groups a frame by cell as pandas' `groupby(CELL, sort=True)` does: the same cells in
the same order, rows with a missing cell field left out, each cell's rows in frame order."""

from __future__ import annotations

import random

import numpy as np
import pytest

from analysis.cells import CELL, cell_groups
from common.frames import pd


def _frame(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = [
        {
            "model": rng.choice(["m1", "M2", "b", "a b", None]),
            "dataset": rng.choice(["misgendered", "ruff", "Zeta"]),
            "setting": rng.choice(["pre", "post", "open", float("nan")]),
            "pronoun": rng.choice(["he", "xe", "they", "fae"]),
            "value": rng.random(),
            "label": rng.choice(["correct", "misgendering", None]),
        }
        for _ in range(rng.randint(1, 60))
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(20))
def test_it_gives_pandas_cells_in_pandas_order_with_each_cells_rows_in_frame_order(seed):
    frame = _frame(seed)
    expected = [
        (dict(zip(CELL, key, strict=True)), group["value"].to_numpy(), group["label"].tolist())
        for key, group in frame.groupby(CELL, sort=True)
    ]

    got = cell_groups(frame, ["value", "label"])

    assert [cell for cell, _ in got] == [cell for cell, _, _ in expected]
    for (_, columns), (_, values, labels) in zip(got, expected, strict=True):
        assert np.array_equal(columns["value"], values)
        assert columns["label"].tolist() == labels


def test_an_empty_frame_has_no_cells():
    assert cell_groups(pd.DataFrame(columns=[*CELL, "value"]), ["value"]) == []
