"""Time and memory of importing labels made elsewhere (docs/domain.md, "Bring your own study"): 100,000 people's
labels and 100,000 judge labels, each in under 60 s with under 500 MB.

    python benchmarks/bench_labels.py [--items 100000] [--annotators 4] [--database sqlite|postgres]

Builds a pool of `--items` free-text items in a fresh database (SQLite in a temporary directory, the embedded
default; or a fresh PostgreSQL database `concord_bench_labels` on 127.0.0.1), writes a long file of people's labels
(`--annotators` annotators on items / annotators each, so `--items` labels in all, with created_at and seconds) and
a judge file (every item, with prob_<label>), then runs `import_labels` and `import_judge_labels` as a researcher
would, each in a process of its own, and times the same labels file again (the idempotent re-import: nothing
changes). Prints one JSON object: per step its `seconds` and the process's `peak_rss_mb` (Python and Django
included), and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
LABELS = ["misgendering", "correct", "no_pronoun"]


def child(command: list[str]) -> None:
    """Run one management command in this process and print its seconds and this process's peak RSS."""
    import django

    django.setup()
    from django.core.management import call_command

    start = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        call_command(*command, stdout=quiet)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(_rss_mb(), 1)}))


def _rss_mb() -> float:
    """This process's peak resident memory: VmHWM (getrusage's ru_maxrss would keep the parent's peak across exec)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _setup_database(kind: str, work: Path) -> None:
    if kind == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
        return
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        connection.execute("DROP DATABASE IF EXISTS concord_bench_labels")
        connection.execute("CREATE DATABASE concord_bench_labels")
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/concord_bench_labels"


def _build(items: int, annotators: int, work: Path) -> tuple[Path, Path]:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Pool, PoolItem

    pool = Pool.objects.create(name="bench-labels", labels=LABELS)
    rng = random.Random(5)
    batch = []
    for n in range(items):
        batch.append(
            PoolItem(
                pool=pool, model_name=f"model-{n % 3}", dataset="mystudy", setting="free", pronoun="",
                template="", context=f"Context {n // 5} of the study. ", continuation=f"Generated text number {n}.",
                heuristic_correct=None, sample_index=n % 5, external_id=f"item-{n}",
            )
        )  # fmt: skip
        if len(batch) == 5000:
            PoolItem.objects.bulk_create(batch)
            batch = []
    PoolItem.objects.bulk_create(batch)
    people, judge = work / "people.csv", work / "judge.csv"
    per_annotator = items // annotators
    with people.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "annotator", "label", "created_at", "seconds"])
        for n in range(per_annotator):
            for a in range(annotators):
                stamp = f"2025-04-{1 + n % 28:02d}T{n % 24:02d}:{a:02d}:00Z"
                writer.writerow([f"item-{n}", f"worker-{a}", rng.choice(LABELS), stamp, f"{rng.uniform(2, 40):.1f}"])
    with judge.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "label", *(f"prob_{label}" for label in LABELS)])
        for n in range(items):
            weights = [rng.random() + 0.01 for _ in LABELS]
            total = sum(weights)
            probabilities = [w / total for w in weights]
            probabilities[-1] = 1 - sum(probabilities[:-1])
            writer.writerow([f"item-{n}", LABELS[probabilities.index(max(probabilities))], *map(repr, probabilities)])
    return people, judge


def _timed(command: list[str]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(command)], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_seconds"] = round(time.perf_counter() - started, 2)  # the process's start (Django) included
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=4)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(json.loads(options.child))
        return
    work = Path(tempfile.mkdtemp(prefix="concord-bench-labels-"))
    _setup_database(options.database, work)
    load_before = os.getloadavg()
    people, judge = _build(options.items, options.annotators, work)
    result = {
        "database": options.database,
        "items": options.items,
        "people_labels": (options.items // options.annotators) * options.annotators,
        "judge_labels": options.items,
        "import_labels": _timed(["import_labels", str(people), "--pool", "bench-labels"]),
        "import_labels_again": _timed(["import_labels", str(people), "--pool", "bench-labels"]),
        "import_judge_labels": _timed(
            ["import_judge_labels", str(judge), "--pool", "bench-labels", "--judge", "api", "--model-id", "gpt-4o"]
        ),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
