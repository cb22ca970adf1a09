"""The bootstrap's resamples of n items with replacement (docs/domain.md, 'Multi-rater statistics'), kept per size.

A resample index depends only on (n, draws, seed), and a report asks for the same few sizes hundreds of times (every
model's cells of one dataset hold as many instances). So each size's (draws, n) index is drawn once and kept, and from
the size's second use on, its count matrix too: how many times each resample takes each item, in float32. A sum of
integer-valued columns over every resample is then one matrix product with the counts, rather than a gather of
draws x n values and a sum over them. An integer sum is exact in any order while it stays below 2**24 (float32's
exact integers), so both ways give the same floats, bit for bit; other values are gathered and summed as numpy sums
them. Once counted, a size keeps its counts alone (the index is drawn again if a gather needs it). At most
RESAMPLE_CACHE_BYTES are kept, the least recently used size dropped first (benchmarks/README.md,
"Report", has the figures).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

RESAMPLE_CACHE_BYTES = 96 * 2**20
# Every partial sum of a product with the counts is an integer of at most n x max|value|: exact in float32 below this.
FLOAT32_EXACT = 2**24


@dataclass
class _Kept:
    """A size's resamples: the index until its counts are taken, then the counts alone (a third of the room, so a
    report's few large sizes all stay kept); the index is drawn again should a gather need it later."""

    index: np.ndarray | None
    counts: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return sum(array.nbytes for array in (self.index, self.counts) if array is not None)


# (n, draws, seed): a size's resamples; (n, draws, seed, m): the counts of the m-item draw that follows them.
_kept: OrderedDict[tuple[int, ...], _Kept] = OrderedDict()
_lock = threading.Lock()


def _keep(key: tuple[int, ...], kept: _Kept) -> None:
    """Keeps (or keeps again, grown) one size's resamples as the most recently used, then drops the least recently
    used sizes until all fit; one that alone exceeds the room is not kept."""
    with _lock:
        if kept.nbytes > RESAMPLE_CACHE_BYTES:
            _kept.pop(key, None)
            return
        _kept[key] = kept
        _kept.move_to_end(key)
        total = sum(entry.nbytes for entry in _kept.values())
        while total > RESAMPLE_CACHE_BYTES:
            total -= _kept.popitem(last=False)[1].nbytes


def _resamples(n: int, draws: int, seed: int) -> tuple[_Kept, bool]:
    """The size's resamples and whether they were kept from an earlier use."""
    key = (n, draws, seed)
    with _lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
            return kept, True
    kept = _Kept(_draw(n, draws, seed))
    _keep(key, kept)
    return kept, False


def _draw(n: int, draws: int, seed: int) -> np.ndarray:
    index = np.random.default_rng(seed).integers(0, n, size=(draws, n))
    index.flags.writeable = False
    return index


def _index(key: tuple[int, int, int], kept: _Kept) -> np.ndarray:
    """The kept index, drawn again (and kept again) where only the counts were kept."""
    if kept.index is None:
        kept.index = _draw(*key)
        _keep(key, kept)
    return kept.index


def resample_index(n: int, *, draws: int, seed: int) -> np.ndarray:
    """The (draws, n) read-only array of the item positions of `draws` resamples of n items with replacement: exactly
    `np.random.default_rng(seed).integers(0, n, size=(draws, n))`, drawn once per size and kept."""
    return _index((n, draws, seed), _resamples(n, draws, seed)[0])


def resample_counts(index: np.ndarray, *, rows: int = 64) -> np.ndarray:
    """How many times each resample (row of `index`) takes each item: one bincount per block of rows, each row's items
    offset by n times its place in the block (blocks small enough to stay in the CPU's cache)."""
    draws, n = index.shape
    counts = np.empty((draws, n), dtype=np.float32)
    offsets = (np.arange(rows, dtype=index.dtype) * n)[:, None]
    for start in range(0, draws, rows):
        block = index[start : start + rows]
        flat = (block + offsets[: len(block)]).ravel()
        counts[start : start + rows] = np.bincount(flat, minlength=len(block) * n).reshape(len(block), n)
    counts.flags.writeable = False
    return counts


def kept_resample_counts(n: int, *, draws: int, seed: int) -> np.ndarray:
    """`resample_counts(resample_index(n, draws=draws, seed=seed))`, counted once per size and kept (read-only)."""
    key = (n, draws, seed)
    kept, _ = _resamples(n, draws, seed)
    if kept.counts is None:
        kept.counts = resample_counts(_index(key, kept))
        kept.index = None
        _keep(key, kept)
    return kept.counts


def following_resample_counts(n: int, m: int, *, draws: int, seed: int) -> np.ndarray:
    """The counts of the second draw of `default_rng(seed)`, `integers(0, m, (draws, m))` after `integers(0, n,
    (draws, n))` (a corrected rate's unlabelled units after its labelled ones), counted once and kept (read-only)."""
    key = (n, draws, seed, m)
    with _lock:
        kept = _kept.get(key)
        if kept is not None and kept.counts is not None:
            _kept.move_to_end(key)
            return kept.counts
    rng = np.random.default_rng(seed)
    rng.integers(0, n, size=(draws, n))
    counts = resample_counts(rng.integers(0, m, size=(draws, m)))
    _keep(key, _Kept(None, counts))
    return counts


def _exact_in_float32(columns: np.ndarray) -> bool:
    """Whether every column holds finite integers whose sums over any resample stay float32-exact."""
    if not np.isfinite(columns).all() or not (columns == np.round(columns)).all():
        return False
    return columns.shape[0] * float(np.abs(columns).max(initial=0.0)) < FLOAT32_EXACT


def resampled_sums(columns: np.ndarray, *, draws: int, seed: int) -> np.ndarray:
    """The sum of each column of `columns` (n items x k, float) over each of the resamples of `resample_index(n)`:
    a (draws, k) float array, the same floats as `columns[:, j][index].sum(axis=1)` for every column j."""
    columns = np.asarray(columns, dtype=float)
    n = columns.shape[0]
    key = (n, draws, seed)
    kept, before = _resamples(n, draws, seed)
    # Counting a size's resamples costs about two gathers: worth it from its second use, or at once for three or
    # more columns (a contingency table's one-hot cells).
    if (before or columns.shape[1] >= 3) and _exact_in_float32(columns):
        counts = kept.counts
        if counts is None:
            counts = kept.counts = resample_counts(_index(key, kept))
            kept.index = None
            _keep(key, kept)
        return (counts @ columns.astype(np.float32)).astype(np.float64)
    index = _index(key, kept)
    return np.stack([column[index].sum(axis=1) for column in columns.T], axis=1)
