"""pandas' grouped sums of floats on arrays: what `frame.groupby(groups, sort=True).sum()` gives, to the last bit,
without the grouping's factorizing and the frames around it, whose cost does not shrink with the rows. crowd-kit's
models sum this way on every EM step (`dawid_skene.py`, `mace.py`), so computing their steps on arrays keeps
crowd-kit's numbers only if the sums are pandas' own.

pandas sums a frame's block (columns x rows) per group with numpy's `add.reduceat` when the rows come sorted by group,
and with its compensated (Kahan) kernel otherwise; `grouped_sums` takes the same path with the same kernel.
"""

from __future__ import annotations

import numpy as np

from common.frames import pd

# The kernel of pandas' grouped sum (called with the arguments pandas' groupby passes it).
group_sum = pd._libs.groupby.group_sum


def grouped_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group (0 .. n_groups - 1) the sum of each row of `values` (columns x rows, C-contiguous, as a frame's
    block holds them) over the rows of that group in order (`groups`: each row's group), 0 for a group without
    rows: columns x groups."""
    out = np.zeros((values.shape[0], n_groups))
    if not len(groups):
        return out
    if (groups[1:] >= groups[:-1]).all():
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        out[:, groups[starts]] = np.add.reduceat(values, starts, axis=1)
        return out
    sums = np.empty((n_groups, values.shape[0]))
    group_sum(
        out=sums,
        counts=np.zeros(n_groups, dtype=np.int64),
        values=values.T,
        labels=groups,
        mask=None,
        result_mask=None,
        min_count=0,
        is_datetimelike=False,
        initial=0,
    )
    return sums.T
