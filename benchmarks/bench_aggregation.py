"""Time what the multi-rater statistics add to a report (docs/domain.md, 'Multi-rater statistics'), on the paper's
pool shape: 2,400 items, 200 of them rated twice, 20 annotators, labels drawn 85% correct / 12% misgendering / 3% no
pronoun. No database: the aggregation works on the ratings frame the pool's query returns.

    python benchmarks/bench_aggregation.py [--runs 3]

Prints one JSON object (seconds): `aggregate` (majority + Dawid-Skene + MACE with one restart, as the report runs
them), `mace_default` (crowd-kit's MACE with its ten default restarts, once, for comparison), `mace_crowd_kit`,
`mace_arrays` and `mace_crowd_kit_again` (one restart each, side by side: crowd-kit's own, the report's with its
E-step on arrays, crowd-kit's again), `dawid_skene_crowd_kit`, `dawid_skene_arrays` and `dawid_skene_crowd_kit_again`
(likewise: crowd-kit's own, the report's EM on arrays, crowd-kit's again), `dawid_skene_small_*` (the same three on a
small pool of 40 items, each rated by two of four annotators, summed over 20 fits: the quality dashboard's and a
test's shape), `bootstrap_96_cells` (2,000-draw intervals for 96 cells of 25 items, five
figures each), and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.metrics.agreement import bootstrap_ci  # noqa: E402
from annotation.selectors.aggregate import ratings_aggregate  # noqa: E402


def ratings(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(2400):
        raters = rng.choice(20, size=2 if item < 200 else 1, replace=False)
        truth = rng.choice(["correct", "misgendering", "no_pronoun"], p=[0.85, 0.12, 0.03])
        for rater in raters:
            label = truth if rng.random() < 0.95 else rng.choice(["correct", "misgendering", "no_pronoun"])
            rows.append((item, f"annotator{rater}", label))
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def small_ratings(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        (item, f"annotator{rater}", rng.choice(["correct", "misgendering", "no_pronoun"], p=[0.6, 0.3, 0.1]))
        for item in range(40)
        for rater in rng.choice(4, size=2, replace=False)
    ]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    data = ratings()
    timings: dict[str, object] = {"load_average_before": os.getloadavg()}
    aggregate = []
    for _ in range(runs):
        start = time.perf_counter()
        ratings_aggregate(ratings=data)
        aggregate.append(round(time.perf_counter() - start, 2))
    timings["aggregate"] = aggregate
    timings["aggregate_median"] = statistics.median(aggregate)
    from crowdkit.aggregation import MACE

    from annotation.selectors.mace import ArrayMACE

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MACE().fit(data)
    timings["mace_default"] = round(time.perf_counter() - start, 2)
    for name, model in (("mace_crowd_kit", MACE), ("mace_arrays", ArrayMACE), ("mace_crowd_kit_again", MACE)):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model(n_restarts=1).fit(data)
        timings[name] = round(time.perf_counter() - start, 2)
    from crowdkit.aggregation import DawidSkene

    from annotation.selectors.dawid_skene import ArrayDawidSkene

    small = [small_ratings(seed) for seed in range(20)]
    for name, model in (("crowd_kit", DawidSkene), ("arrays", ArrayDawidSkene), ("crowd_kit_again", DawidSkene)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model(n_iter=100).fit(data)
            timings[f"dawid_skene_{name}"] = round(time.perf_counter() - start, 3)
            start = time.perf_counter()
            for frame in small:
                model(n_iter=100).fit(frame)
            timings[f"dawid_skene_small_{name}"] = round(time.perf_counter() - start, 3)
    cells = np.random.default_rng(1).integers(0, 2, size=(96, 25)).astype(float)
    start = time.perf_counter()
    for cell in cells:
        for _ in range(5):
            bootstrap_ci(cell)
    timings["bootstrap_96_cells"] = round(time.perf_counter() - start, 2)
    timings["load_average_after"] = os.getloadavg()
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
