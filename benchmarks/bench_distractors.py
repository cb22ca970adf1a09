"""Time the full import of RUFF's distractor sets: 5,623,200 instances (counts 0-5), streamed into PostgreSQL with
COPY (docs/domain.md, 'RUFF with distractors'). Goal: under 10 minutes and under 1 GB of memory on this machine.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/concord_distr_bench \\
        python benchmarks/bench_distractors.py [--distractors 0-5] [--drop]

The script creates that database if it is missing, migrates it, imports, and prints one JSON object: rows, seconds,
rows per second, the process's peak resident memory (MiB) and the load average. `--drop` removes the database after.
The input is RUFF's data (AGPL-3.0; see the NOTICE beside it in the shared datasets).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import psycopg  # noqa: E402

DATASETS = Path(os.environ.get("CONCORD_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "datasets"


def _admin_connection(url: str) -> psycopg.Connection:
    parts = urlparse(url)
    return psycopg.connect(
        host=parts.hostname, port=parts.port or 5432, user=parts.username, dbname="postgres", autocommit=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", default="0-5")
    parser.add_argument("--drop", action="store_true", help="drop the benchmark database afterwards")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database of your own (it is created if missing)")
    name = urlparse(url).path.lstrip("/")
    with _admin_connection(url) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from generation.datasets.ruff_distractors import dataset_import_ruff_distractors

    low, _, high = args.distractors.partition("-")
    counts = range(int(low), int(high or low) + 1)
    started = time.perf_counter()
    result = dataset_import_ruff_distractors(
        task_path=DATASETS / "ruff" / "distractors" / "task.tsv",
        context_path=DATASETS / "ruff" / "distractors" / "context.tsv",
        distractors=counts,
        name=f"bench-{int(time.time())}",
    )
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "rows": result.written,
                "by_distractors": result.by_distractors,
                "seconds": round(seconds, 1),
                "rows_per_second": round(result.written / seconds),
                "peak_rss_mib": round(peak_mib),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )
    connection.close()
    if args.drop:
        with _admin_connection(url) as admin:
            admin.execute(f'DROP DATABASE "{name}"')


if __name__ == "__main__":
    main()
