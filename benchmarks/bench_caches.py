"""Whether each cache on a path people drive pays: the report and the quality page built afresh (what a researcher
waits for after a change to the pool), with and without the cache, taking turns, on the demo-scale study of
`bench_report.py --scale demo` (4 models x both datasets, 16,000 generations, a 320-item pool, 80 items annotated
twice) in its own PostgreSQL database.

    python benchmarks/bench_caches.py [--rounds 3] [--reuse] [--caches kappa,resamples,strings]

The caches, and what "without" is:

- kappa: `analysis.metrics.agreement._kappa_of_table`'s LRU of statsmodels' kappa per table; without, every table is
  computed again (`__wrapped__`).
- resamples: `analysis.metrics.resampling`'s resamples kept per size; without, no room (`RESAMPLE_CACHE_BYTES = 0`).
- strings: `common.frames` keeping strings as Python objects (`mode.string_storage = "python"`); without, pandas'
  default (pyarrow), set before each request so that the frames it makes use it.

Each round times, for each cache, the request with the cache then without (the order swapped every other round),
each after one untimed build in the same state, so that what a process keeps between requests is warm, as it is on a
worker that has served the page before. Both must give the same report. The report cache and the aggregates are
emptied before every request (they are keyed by the pool's stamp, which a change bumps). Prints one JSON object: per
cache and request the wall and CPU seconds of each turn, the medians, and the share of the request the cache saves.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CACHES = ("kappa", "resamples", "strings")


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="keep the study an earlier run built")
    parser.add_argument("--caches", default=",".join(CACHES))
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/concord_caches_bench"),
    )
    return parser.parse_args()


@contextlib.contextmanager
def _without(name: str) -> Iterator[None]:
    """The state in which the cache `name` is not used."""
    if name == "kappa":
        from analysis.metrics import agreement

        real = agreement._kappa_of_table
        agreement._kappa_of_table = real.__wrapped__  # type: ignore[assignment]
        try:
            yield
        finally:
            agreement._kappa_of_table = real
    elif name == "resamples":
        from analysis.metrics import resampling

        room = resampling.RESAMPLE_CACHE_BYTES
        resampling.RESAMPLE_CACHE_BYTES = 0
        resampling._kept.clear()
        try:
            yield
        finally:
            resampling.RESAMPLE_CACHE_BYTES = room
    elif name == "strings":
        from common.frames import pd

        pd.set_option("mode.string_storage", "pyarrow")
        try:
            yield
        finally:
            pd.set_option("mode.string_storage", "python")
    else:
        raise SystemExit(f"no cache {name!r}; the caches are {', '.join(CACHES)}")


def _requests() -> dict[str, Callable[[], str]]:
    from django.core.cache import cache

    from analysis.report.exports.render import report_json
    from analysis.selectors.quality import quality_dashboard
    from analysis.services import report_build_uncached
    from annotation.models import Pool
    from annotation.selectors.aggregate import aggregates_memo_clear

    pool = Pool.objects.get(name="bench")

    def fresh() -> None:
        cache.clear()
        aggregates_memo_clear()

    def report() -> str:
        fresh()
        return report_json(report=report_build_uncached(pool=pool))

    def quality() -> str:
        fresh()
        return json.dumps(quality_dashboard(pool=pool), sort_keys=True, default=str)

    return {"report": report, "quality": quality}


def _timed(request: Callable[[], str]) -> tuple[float, float, str]:
    request()  # untimed: what the process keeps between requests is warm
    wall, cpu = time.perf_counter(), time.process_time()
    body = request()
    return time.perf_counter() - wall, time.process_time() - cpu, body


def main() -> None:
    args = _parse()
    import bench_report

    bench_report._demo_scale()
    bench_report._setup(args.database_url)
    from analysis.services import repetition_rates_fill
    from annotation.models import Pool
    from generation.models import Job

    if not (args.reuse and Pool.objects.filter(name="bench").exists()):
        bench_report._build(0)
        for job_id in Job.objects.values_list("id", flat=True):
            repetition_rates_fill(job_ids=[job_id])
    requests = _requests()
    names = [name for name in args.caches.split(",") if name]
    figures: dict = {name: {request: {"with": [], "without": [], "with_cpu": [], "without_cpu": []}
                            for request in requests} for name in names}  # fmt: skip
    load_before = [round(x, 2) for x in os.getloadavg()]
    for round_ in range(args.rounds):
        for name in names:
            for request_name, request in requests.items():
                turns = ["with", "without"] if round_ % 2 == 0 else ["without", "with"]
                bodies = {}
                for turn in turns:
                    with _without(name) if turn == "without" else contextlib.nullcontext():
                        wall, cpu, bodies[turn] = _timed(request)
                    kept = figures[name][request_name]
                    kept[turn].append(round(wall, 3))
                    kept[f"{turn}_cpu"].append(round(cpu, 3))
                assert bodies["with"] == bodies["without"], f"{name} changed the {request_name}"
    summary = {}
    for name, by_request in figures.items():
        for request_name, kept in by_request.items():
            with_, without = statistics.median(kept["with"]), statistics.median(kept["without"])
            kept["with_median"], kept["without_median"] = with_, without
            kept["saves_share"] = round(1 - with_ / without, 3) if without else None
            summary[f"{name}/{request_name}"] = kept["saves_share"]
    print(
        json.dumps(
            {
                "load_average_before": load_before,
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "saves_share": summary,
                "figures": figures,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
