"""Time of a released study brought in whole (docs/domain.md, "Bring your own study"): importing 2,552 free-text
items with 3 annotators' labels and 6 API judges' labels, and the cold report of the pool, each under 10 s.

    python benchmarks/bench_study_shapes.py [--items 2552] [--annotators 3] [--judges 6]
        [--scale nominal|ordinal] [--database sqlite|postgres] [--pronoun xe]

Writes the study's files as a researcher has them (generations as CSV; people's labels in the long format, labels
spelled as the study spelled them; one CSV per judge with prob_<label>), in a fresh database (SQLite in a temporary
directory, the embedded default; or a fresh PostgreSQL database `concord_bench_shapes` on 127.0.0.1), then runs
`import_generations`, `import_labels` and `import_judge_labels` once per judge in one process of its own (the
import), and `report --format json` in another with an empty cache (the cold report). Prints one JSON object: each
step's seconds inside its process (Django's start left out; `wall_seconds` has it) and the machine's load average
before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
NOMINAL_LABELS = ["Not misgendering", "Misgendering", "Unsure"]
ORDINAL_LABELS = ["1", "2", "3", "4", "5"]
POOL = "bench-shapes"


def _setup_database(kind: str, work: Path) -> None:
    if kind == "sqlite":
        os.environ["DATABASE_URL"] = f"sqlite:///{work / 'bench.sqlite3'}"
        return
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        connection.execute("DROP DATABASE IF EXISTS concord_bench_shapes")
        connection.execute("CREATE DATABASE concord_bench_shapes")
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/concord_bench_shapes"


def _write(path: Path, header: list[str], rows) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _files(work: Path, *, items: int, annotators: int, judges: int, labels: list[str], pronoun: str) -> dict:
    rng = random.Random(17)
    truth = [rng.choices(range(len(labels)), weights=[6, 3, 1, 1, 1][: len(labels)])[0] for _ in range(items)]

    def noisy(index: int, accuracy: float) -> str:
        return labels[index] if rng.random() < accuracy else rng.choice(labels)

    generations = _write(
        work / "generations.csv",
        ["item", "model", "dataset", "context", "generation", "pronoun", "sample"],
        (
            [f"s{n}", f"model-{n % 4}", "released", f"Context {n // 2} of the released study about Alex. ",
             f"Alex said xe would come; generated text {n}.", pronoun, n % 2]
            for n in range(items)
        ),
    )  # fmt: skip
    people = _write(
        work / "people.csv",
        ["item", "annotator", "label"],
        ([f"s{n}", f"rater-{a}", noisy(truth[n], 0.85)] for n in range(items) for a in range(annotators)),
    )
    judge_files = []
    for j in range(judges):
        rows = []
        for n in range(items):
            label = noisy(truth[n], 0.7 + 0.04 * j)
            weights = [rng.random() + (3 if x == label else 0.01) for x in labels]
            total = sum(weights)
            probabilities = [w / total for w in weights]
            probabilities[-1] = 1 - sum(probabilities[:-1])
            rows.append([f"s{n}", labels[probabilities.index(max(probabilities))], *map(repr, probabilities)])
        judge_files.append(_write(work / f"judge-{j}.csv", ["item", "label", *(f"prob_{x}" for x in labels)], rows))
    return {"generations": generations, "people": people, "judges": judge_files}


def child(steps: list[list[str]]) -> None:
    """Run management commands in this process; print the seconds of each and of all."""
    import django

    django.setup()
    from django.core.cache import cache
    from django.core.management import call_command

    cache.clear()
    seconds, cpu = [], []
    with open(os.devnull, "w") as quiet:
        for command in steps:
            start, start_cpu = time.perf_counter(), time.process_time()
            call_command(*command, stdout=quiet)
            seconds.append(round(time.perf_counter() - start, 2))
            cpu.append(round(time.process_time() - start_cpu, 2))
    # CPU seconds beside the wall's: on a shared machine the wall time is mostly waiting for a core.
    print(json.dumps({"seconds": round(sum(seconds), 2), "cpu_seconds": round(sum(cpu), 2), "steps": seconds}))


def _timed(steps: list[list[str]]) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(steps)], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["wall_seconds"] = round(time.perf_counter() - started, 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2552)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--judges", type=int, default=6)
    parser.add_argument("--scale", choices=["nominal", "ordinal"], default="nominal")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--pronoun",
        default="",
        help="the pronoun every generation states (the heuristic then runs, loading spaCy); default none, as in "
        "the released studies",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(json.loads(options.child))
        return
    work = Path(tempfile.mkdtemp(prefix="concord-bench-shapes-"))
    _setup_database(options.database, work)
    labels = NOMINAL_LABELS if options.scale == "nominal" else ORDINAL_LABELS
    files = _files(
        work,
        items=options.items,
        annotators=options.annotators,
        judges=options.judges,
        labels=labels,
        pronoun=options.pronoun,
    )
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--verbosity", "0"], check=True)
    load_before = os.getloadavg()
    declare = ["--labels", ",".join(labels), "--scale", options.scale]
    declare += ["--positive", "Misgendering"] if options.scale == "nominal" else ["--positive-at-least", "4"]
    imports = [
        ["import_generations", str(files["generations"]), "--pool", POOL, *declare],
        ["import_labels", str(files["people"]), "--pool", POOL],
        *(
            ["import_judge_labels", str(path), "--pool", POOL, "--judge", f"api-judge-{j}", "--model-id", f"model-{j}"]
            for j, path in enumerate(files["judges"])
        ),
    ]
    result = {
        "database": options.database,
        "scale": options.scale,
        "pronoun": options.pronoun or None,
        "items": options.items,
        "annotators": options.annotators,
        "judges": options.judges,
        "import": _timed(imports),
        "report_cold": _timed([["report", "--pool", POOL, "--format", "json", "--out", str(work / "report.json")]]),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
