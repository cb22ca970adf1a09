"""A crowd-sized pool (docs/domain.md, "Bring your own study"): 400 items x 600 annotators, 240,000 annotations, as
a Prolific study of that size makes. Times what a researcher asks of it on PostgreSQL.

    python benchmarks/bench_crowd.py [--items 400] [--annotators 600] [--reuse]
        [--database-url postgres://postgres@127.0.0.1:5432/concord_bench_crowd]

Builds (bulk_create, in its own database) a pool of `--items` free-text items and `--annotators` imported
annotators who each label every item, annotator a's label of item i being `labels[(a*7+i)%3]` (every item gets each
label a third of the time: no majority). Then times, each in this process:

- `report_cold_seconds`: the JSON report computed afresh (report and aggregate caches emptied; target <= 30 s);
- `quality_page_seconds`: the quality page as a researcher's browser loads it, cold and warm (target <= 3 s):
  `quality_page_first_seconds` is the first request of this process (cache emptied), which also imports scipy.stats,
  statsmodels and crowd-kit (about 4 s); `quality_page_cold_seconds` the next, the caches emptied again, as a server
  worker that has already served a page answers after new work; then `quality_page_seconds` from the cache;
- `export_csv_seconds`, `export_jsonl_seconds`: the streamed annotation export (`GET /api/pools/P/annotations/`)
  read to its end, with `export_<fmt>_peak_growth_mb`: the growth of this process's peak resident memory while
  streaming (the exports run first, so the peak is still that of the build);
- `adjudication_page_seconds`, `export_annotations_seconds` (the command, to a file).

Prints one JSON object, with the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LABELS = ["misgendering", "correct", "no_pronoun"]
POOL = "crowd"


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--annotators", type=int, default=600)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/concord_bench_crowd"),
    )
    parser.add_argument("--reuse", action="store_true", help="keep the pool an earlier run built")
    parser.add_argument(
        "--steps", default="export,report,quality,adjudication,command", help="which of the timings to take, in order"
    )
    return parser.parse_args()


def _setup(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(*, items: int, annotators: int) -> dict:
    """The pool, from scratch."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction

    from annotation.models import ORIGIN_IMPORTED, Annotation, Pool, PoolItem
    from annotation.services.label_import import imported_username

    started = time.perf_counter()
    user_model = get_user_model()
    Pool.objects.filter(name=POOL).delete()
    user_model.objects.filter(username__startswith=f"imported.{POOL}.").delete()
    with transaction.atomic():
        pool = Pool.objects.create(name=POOL, labels=LABELS)
        pool_items = PoolItem.objects.bulk_create(
            [
                PoolItem(
                    pool=pool, model_name=f"model-{i % 2}", dataset="mystudy", setting="free", pronoun="",
                    template="", context=f"Context {i // 4} of the study. ", continuation=f"Generated text {i}.",
                    heuristic_correct=None, sample_index=i % 4, external_id=f"item-{i}",
                )
                for i in range(items)
            ],
            batch_size=5000,
        )  # fmt: skip
        unusable = make_password(None)
        people = user_model.objects.bulk_create(
            [
                user_model(username=imported_username(pool, f"worker-{a}"), password=unusable, is_active=False)
                for a in range(annotators)
            ],
            batch_size=5000,
        )
        Annotation.objects.bulk_create(
            (
                Annotation(
                    item_id=item.pk, annotator_id=person.pk, label=LABELS[(a * 7 + i) % 3], seconds=12.5,
                    origin=ORIGIN_IMPORTED,
                )
                for a, person in enumerate(people)
                for i, item in enumerate(pool_items)
            ),
            batch_size=10_000,
        )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"build_seconds": round(time.perf_counter() - started, 2), "annotations": items * annotators}


def _rss_peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _client():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from accounts.roles import RESEARCHER
    from annotation.models import Pool

    user, _ = get_user_model().objects.get_or_create(username="bench-researcher")
    user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
    Pool.objects.get(name=POOL).project.members.add(user)  # a researcher sees only the pools of her projects
    client = Client()
    client.force_login(user)
    return client


def _timed_get(client, url: str) -> tuple[float, object]:
    started = time.perf_counter()
    response = client.get(url)
    if getattr(response, "streaming", False):
        for _ in response.streaming_content:
            pass
    else:
        _ = response.content
    seconds = time.perf_counter() - started
    assert response.status_code == 200, (url, response.status_code)
    return round(seconds, 2), response


def _export(client, fmt: str) -> dict:
    """The streamed export read to its end: its seconds, its size, and how far this process's peak resident memory
    rose while reading it (a response held whole would raise it by about its size)."""
    before = _rss_peak_mb()
    started = time.perf_counter()
    response = client.get(f"/api/pools/{POOL}/annotations/?format={fmt}")
    assert response.status_code == 200, response.status_code
    size = 0
    for chunk in response.streaming_content if response.streaming else [response.content]:
        size += len(chunk)
    seconds = time.perf_counter() - started
    return {
        f"export_{fmt}_seconds": round(seconds, 2),
        f"export_{fmt}_mb": round(size / 2**20, 1),
        f"export_{fmt}_peak_growth_mb": round(_rss_peak_mb() - before, 1),
    }


def main() -> None:
    args = _parse()
    figures: dict = {"load_before": os.getloadavg()[0]}
    _setup(args.database_url)
    from django.core.cache import cache
    from django.core.management import call_command

    from annotation.models import Annotation, Pool
    from annotation.selectors.aggregate import aggregates_memo_clear

    existing = Pool.objects.filter(name=POOL).first()
    if not (args.reuse and existing and Annotation.objects.filter(item__pool=existing).exists()):
        figures.update(build(items=args.items, annotators=args.annotators))
    client = _client()
    steps = args.steps.split(",")
    if "export" in steps:  # first, while this process's peak memory is still that of the build
        figures.update(_export(client, "csv"))
        figures.update(_export(client, "jsonl"))
    if "report" in steps:
        cache.clear()
        aggregates_memo_clear()
        figures["report_cold_seconds"], _ = _timed_get(client, f"/api/reports/{POOL}/")
        figures["report_warm_seconds"], _ = _timed_get(client, f"/api/reports/{POOL}/")
    if "quality" in steps:
        cache.clear()
        aggregates_memo_clear()
        figures["quality_page_first_seconds"], _ = _timed_get(client, f"/pools/{POOL}/quality/")
        cache.clear()
        aggregates_memo_clear()
        figures["quality_page_cold_seconds"], _ = _timed_get(client, f"/pools/{POOL}/quality/")
        figures["quality_page_seconds"], _ = _timed_get(client, f"/pools/{POOL}/quality/")
    if "adjudication" in steps:
        figures["adjudication_page_seconds"], _ = _timed_get(client, f"/pools/{POOL}/adjudicate/")
    if "command" in steps:
        with tempfile.TemporaryDirectory() as work:
            started = time.perf_counter()
            with open(os.devnull, "w") as quiet:
                call_command("export_annotations", pool=POOL, out=str(Path(work) / "a.csv"), stdout=quiet)
            figures["export_annotations_seconds"] = round(time.perf_counter() - started, 2)
    figures["peak_rss_mb"] = round(_rss_peak_mb(), 1)
    figures["load_after"] = os.getloadavg()[0]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
