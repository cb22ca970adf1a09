"""Time grouping a report's frames by cell: `analysis.cells.cell_groups` against iterating pandas'
`groupby(CELL, sort=True)` groups, side by side, on frames of 10 rows (a test's pool), 1,500, 2,500 and 120,000 (a
paper-scale study's instances). No database. `bench_caches.py` times what the grouping is worth in a whole report.

    python benchmarks/bench_grouping.py [--runs 5]

Prints one JSON object: per row count, the best of `--runs` in milliseconds for `pandas` and `cell_groups`; the
reference loop (bench_annotation.py) and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_annotation import reference_ms  # noqa: E402

from analysis.cells import CELL, cell_groups  # noqa: E402
from common.frames import pd  # noqa: E402

COLUMNS = ["correct", "samples", "m_prob"]


def instances(rows: int, seed: int = 0) -> pd.DataFrame:
    """An instance frame's shape: 6 models x 2 datasets x 2 settings x 4 pronouns, counts and m_prob."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "model": [f"model-{i}" for i in rng.integers(0, 6, rows)],
            "dataset": rng.choice(["misgendered", "ruff"], rows).tolist(),
            "setting": rng.choice(["pre", "post"], rows).tolist(),
            "pronoun": rng.choice(["he", "she", "they", "xe"], rows).tolist(),
            "correct": rng.integers(0, 6, rows),
            "samples": np.full(rows, 5),
            "m_prob": rng.random(rows),
        }
    )


def by_pandas(frame: pd.DataFrame) -> list:
    return [(key, {c: group[c].to_numpy() for c in COLUMNS}) for key, group in frame.groupby(CELL, sort=True)]


def best_ms(function, frame: pd.DataFrame, runs: int) -> float:
    repeat = max(1, 3000 // len(frame))  # small frames: time many calls, report one
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(repeat):
            function(frame)
        best = min(best, (time.perf_counter() - started) / repeat)
    return round(best * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    result: dict = {"reference_ms_before": reference_ms(), "load_before": os.getloadavg()[0]}
    for rows in (10, 1_500, 2_500, 120_000):
        frame = instances(rows)
        result[str(rows)] = {
            "pandas": best_ms(by_pandas, frame, args.runs),
            "cell_groups": best_ms(lambda f: cell_groups(f, COLUMNS), frame, args.runs),
        }
    result |= {"reference_ms_after": reference_ms(), "load_after": os.getloadavg()[0]}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
