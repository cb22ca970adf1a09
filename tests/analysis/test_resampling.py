"""The bootstrap's kept resamples (analysis.metrics.resampling): the generator's own draws, sums equal bit for bit to
numpy's gather-and-sum whichever way they are computed, and the room they take bounded."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from analysis.metrics import resampling
from analysis.metrics.agreement import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, bootstrap_ci, bootstrap_ratio_ci
from analysis.metrics.resampling import resample_index, resampled_sums


@pytest.fixture(autouse=True)
def nothing_kept(monkeypatch):
    monkeypatch.setattr(resampling, "_kept", OrderedDict())


def fresh_index(n: int, draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(draws, n))


def gathered_sums(columns: np.ndarray, index: np.ndarray) -> np.ndarray:
    """What the bootstrap computed before resamples were kept: each column gathered per resample and summed."""
    return np.stack([columns[:, j][index].sum(axis=1) for j in range(columns.shape[1])], axis=1)


def test_the_index_is_the_generators_own_draws_drawn_once_per_size():
    for n, draws, seed in [(7, 50, 1), (7, 50, 2), (7, 60, 1), (30, 2000, BOOTSTRAP_SEED)]:
        first = resample_index(n, draws=draws, seed=seed)
        np.testing.assert_array_equal(first, fresh_index(n, draws, seed))
        assert resample_index(n, draws=draws, seed=seed) is first
        assert not first.flags.writeable
    assert len(resampling._kept) == 4


@pytest.mark.parametrize("draws", [1, 63, 64, 65, 200])
def test_counts_are_how_often_each_resample_takes_each_item(draws):
    index = fresh_index(37, draws, seed=draws)
    expected = np.stack([np.bincount(row, minlength=37) for row in index])
    counts = resampling.resample_counts(index)
    np.testing.assert_array_equal(counts, expected)
    assert counts.dtype == np.float32 and not counts.flags.writeable


def columns_of(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if kind == "binary":
        return (rng.random((n, 1)) < 0.6).astype(float)
    if kind == "counts":  # correct samples out of samples, as the accuracy's ratio resamples them
        samples = rng.integers(0, 6, n)
        return np.column_stack([rng.integers(0, samples + 1), samples]).astype(float)
    if kind == "signed integers":
        return rng.integers(-40, 40, (n, 2)).astype(float)
    if kind == "fractions":
        return rng.normal(size=(n, 2))
    if kind == "missing":
        columns = (rng.random((n, 1)) < 0.5).astype(float)
        columns[n // 2, 0] = np.nan
        return columns
    if kind == "past float32's integers":  # n x max|value| >= 2**24: summed as numpy sums
        return np.full((n, 1), float(2**24 // n + 1))
    raise AssertionError(kind)


KINDS = ["binary", "counts", "signed integers", "fractions", "missing", "past float32's integers"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [2, 25, 301])
def test_sums_are_numpys_gathered_sums_bit_for_bit(kind, n):
    rng = np.random.default_rng(n)
    index = fresh_index(n, draws=130, seed=n)
    for _ in range(3):  # the first use gathers; later uses of integer columns take the counts
        columns = columns_of(kind, rng, n)
        sums = resampled_sums(columns, draws=130, seed=n)
        assert sums.dtype == np.float64 and sums.shape == (130, columns.shape[1])
        np.testing.assert_array_equal(sums, gathered_sums(columns, index), strict=True)
    counted = resampling._kept[(n, 130, n)].counts is not None
    assert counted == (kind in {"binary", "counts", "signed integers"})


@pytest.mark.parametrize("seed", range(6))
def test_intervals_are_those_of_the_draws_in_one_array(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    index = fresh_index(n)
    values = (rng.random(n) < rng.random()).astype(float) if seed % 2 else rng.normal(size=n)
    samples = rng.integers(1, 6, n).astype(float)
    correct = rng.integers(0, samples + 1).astype(float)
    expected = list(np.percentile(values[index].mean(axis=1), [2.5, 97.5]))
    expected_ratio = list(np.percentile(correct[index].sum(axis=1) / samples[index].sum(axis=1), [2.5, 97.5]))
    for _ in range(3):
        assert bootstrap_ci(values) == expected
        assert bootstrap_ratio_ci(correct, samples) == expected_ratio


def test_the_kept_resamples_stay_within_their_room(monkeypatch):
    index_bytes = 100 * 10 * 8  # one (100, 10) int64 index; its float32 counts take half as much again
    monkeypatch.setattr(resampling, "RESAMPLE_CACHE_BYTES", 3 * index_bytes)
    for seed in [1, 2, 3]:
        resample_index(10, draws=100, seed=seed)
    resample_index(10, draws=100, seed=1)  # used again: seed 2 is now the least recently used
    resample_index(10, draws=100, seed=4)
    assert [key[2] for key in resampling._kept] == [3, 1, 4]
    big = resample_index(40, draws=100, seed=1)  # more than all the room: drawn, not kept
    np.testing.assert_array_equal(big, fresh_index(40, 100, 1))
    assert [key[2] for key in resampling._kept] == [3, 1, 4]
    for _ in range(2):  # the second use keeps seed 4's counts in place of its index: half the room, all three stay
        resampled_sums(np.ones((10, 1)), draws=100, seed=4)
    assert [key[2] for key in resampling._kept] == [3, 1, 4]
    assert resampling._kept[(10, 100, 4)].index is None
    assert resampling._kept[(10, 100, 4)].nbytes == index_bytes // 2
    resampled_sums(np.full((10, 1), 0.5), draws=100, seed=4)  # a gather draws seed 4's index again: seed 3 goes
    assert [key[2] for key in resampling._kept] == [1, 4]
    assert sum(kept.nbytes for kept in resampling._kept.values()) <= resampling.RESAMPLE_CACHE_BYTES


def test_two_sizes_taken_in_turn_stay_kept_by_their_counts(monkeypatch):
    """A report's judges alternate between sizes (all items, those a judge labelled): with only the counts kept,
    both sizes fit where their indexes would not, and each is drawn once."""
    draws = 100
    monkeypatch.setattr(resampling, "RESAMPLE_CACHE_BYTES", 2 * 50 * draws * 8 - 1)  # less than two indexes
    drawn = []
    real = resampling._draw
    monkeypatch.setattr(resampling, "_draw", lambda *key: drawn.append(key) or real(*key))
    rng = np.random.default_rng(3)
    for _ in range(3):
        for n in (50, 49):
            columns = rng.integers(0, 2, (n, 4)).astype(float)
            sums = resampled_sums(columns, draws=draws, seed=5)
            np.testing.assert_array_equal(sums, gathered_sums(columns, fresh_index(n, draws, 5)), strict=True)
    assert drawn == [(50, draws, 5), (49, draws, 5)]


def test_a_rates_two_draws_are_counted_as_the_generator_draws_them_and_kept():
    """The labelled units' counts and those of the unlabelled ones drawn after them by the same generator."""
    rng = np.random.default_rng(9)
    first, second = rng.integers(0, 12, size=(70, 12)), rng.integers(0, 5, size=(70, 5))
    for _ in range(2):
        labelled = resampling.kept_resample_counts(12, draws=70, seed=9)
        unlabelled = resampling.following_resample_counts(12, 5, draws=70, seed=9)
        np.testing.assert_array_equal(labelled, resampling.resample_counts(first), strict=True)
        np.testing.assert_array_equal(unlabelled, resampling.resample_counts(second), strict=True)
    assert resampling.following_resample_counts(12, 5, draws=70, seed=9) is unlabelled
    assert resampling.kept_resample_counts(12, draws=70, seed=9) is labelled
