"""Instance-level variation (paper eq. 6): the spread of the sampled verdicts of one instance."""

from __future__ import annotations

import numpy as np


def sample_std(correct: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """Population std of a 0/1 vector from its counts: with p = correct/samples it is sqrt(p (1 - p)),
    which for 5 samples takes the values 0, 0.4 and 0.49 only."""
    p = np.asarray(correct, dtype=float) / np.asarray(samples, dtype=float)
    return np.sqrt(p * (1 - p))


def std_levels(samples: int) -> list[float]:
    """Every std a vector of `samples` 0/1 values can have, ascending."""
    return sorted({float(np.sqrt(k / samples * (1 - k / samples))) for k in range(samples + 1)})


def level_key(std: float) -> str:
    return f"{std:.2f}"


def variation_shares(correct: np.ndarray, samples: np.ndarray) -> dict[str, float]:
    """Share of instances at each possible std (keys rounded to two decimals: "0.00", "0.40", "0.49" for 5 samples).
    Every level the sample counts allow is listed, zero shares included."""
    correct, samples = np.asarray(correct), np.asarray(samples)
    if samples.size == 0:
        return {}
    keys = np.array([level_key(x) for x in sample_std(correct, samples)])
    levels = sorted({level_key(x) for n in np.unique(samples) for x in std_levels(int(n))}, key=float)
    return {level: float((keys == level).mean()) for level in levels}
