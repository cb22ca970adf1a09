"""How long an annotator's save waits while a large import writes, on the embedded default (SQLite), where
a 60,000-row import held SQLite's lock for its whole transaction and a save failed after 30 s ("database is locked").

    python benchmarks/bench_import_saves.py [--rows 60000] [--interval 0.2]

Into a fresh SQLite database (the embedded default's settings: WAL, a busy timeout, IMMEDIATE transactions), a pool of
items assigned to one annotator; then a second process imports a file of `--rows` rows (the shape of bench_import.py)
into another pool while this one saves an annotation every `--interval` seconds through `annotation_submit`, the
service the save API calls. Prints one JSON object: the import's seconds, the saves made during the import, how many
failed, and the save times (median, 99th percentile, longest) in milliseconds, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
WORK = Path(tempfile.mkdtemp(prefix="concord-bench-import-saves-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

ITEMS = 200
# The rows of bench_import.py: about 375 bytes each, MISGENDERED, pre-[MASK], distinct continuations.
TEMPLATE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread for the whole street. {mask_token} sold it at noon."
PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread for the whole street. "


def write_file(path: Path, rows: int) -> None:
    import csv

    filler = "and then they walked to the market, talked with the baker about the weather and the price of flour "
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["template", "random_pre_gen", "correct", "pronoun", "model"])
        for n in range(rows):
            writer.writerow([TEMPLATE, f"{PRE}Xe smiled, row {n}, {filler}{filler[: n % 60]}", "1.0", "xe", "m"])


def run_import(path: str, done) -> None:
    from django.db import connections

    from annotation.services.imports import generations_import

    connections.close_all()  # a connection of its own, as a worker process has
    start = time.perf_counter()
    generations_import(paths=[path], pool_name="imported")
    done.value = time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--interval", type=float, default=0.2)
    args = parser.parse_args()

    from accounts.roles import ANNOTATOR
    from accounts.services import user_create_or_update
    from annotation.models import Pool, PoolItem
    from annotation.services import annotation_submit, assignments_create

    call_command("migrate", verbosity=0)
    user, _ = user_create_or_update(username="ana", role=ANNOTATOR, password="bench-password-1")
    pool = Pool.objects.create(name="saved")
    PoolItem.objects.bulk_create(
        PoolItem(pool=pool, model_name="m", dataset="misgendered", setting="pre", pronoun="xe", template="t",
                 context="c", continuation=f"Xe smiled, item {n}.", heuristic_correct=True)
        for n in range(ITEMS)
    )  # fmt: skip
    assignments_create(pool=pool, usernames=["ana"])
    ids = list(PoolItem.objects.filter(pool=pool).values_list("public_id", flat=True))
    path = WORK / "generations.csv"
    write_file(path, args.rows)

    from django.db import connections

    connections.close_all()
    seconds = multiprocessing.Value("d", -1.0)
    importer = multiprocessing.get_context("fork").Process(target=run_import, args=(str(path), seconds))
    importer.start()
    waits, failures, n = [], [], 0
    while importer.is_alive():
        start = time.perf_counter()
        try:
            annotation_submit(user=user, public_id=ids[n % ITEMS], label="correct", seconds=1.0)
        except Exception as exc:  # what an annotator would have seen as a 500
            failures.append(f"{type(exc).__name__}: {exc}")
        waits.append((time.perf_counter() - start) * 1000)
        n += 1
        time.sleep(args.interval)
    importer.join()
    waits.sort()
    print(
        json.dumps(
            {
                "rows": args.rows,
                "import_seconds": round(seconds.value, 1),
                "saves": len(waits),
                "failed": len(failures),
                "failures": failures[:3],
                "save_ms_median": round(statistics.median(waits), 1) if waits else None,
                "save_ms_p99": round(waits[int(0.99 * (len(waits) - 1))], 1) if waits else None,
                "save_ms_longest": round(waits[-1], 1) if waits else None,
                "load_average": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
