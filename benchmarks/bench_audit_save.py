"""What the audit row costs the annotator's save: the service `annotation_submit` timed on PostgreSQL with its audit
INSERT and without it (the row's function replaced by a no-op), alternating rounds so that the machine's load falls
on both alike.

    python benchmarks/bench_audit_save.py [--saves 400] [--rounds 6]

Each round saves `--saves` items once (a first save) and once more with a new label (a revision: the old spans come
back from their DELETE). Prints one JSON line with the median milliseconds per save of each kind, both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/concord_bench_audit"),
    )
    args = parser.parse_args()
    import psycopg

    name = args.database_url.rsplit("/", 1)[1]
    with psycopg.connect(args.database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from accounts.roles import ANNOTATOR
    from accounts.services import user_create_or_update
    from annotation.models import Assignment, Pool, PoolItem
    from annotation.services import annotation as saving

    audit = saving._audit
    timings: dict[str, list[float]] = {"first_audited": [], "first_plain": [], "revise_audited": [], "revise_plain": []}
    for round_ in range(args.rounds):
        for audited in (True, False):
            saving._audit = audit if audited else (lambda **kwargs: None)
            user = user_create_or_update(username=f"bench-{round_}-{audited}", role=ANNOTATOR, password="x")[0]
            pool = Pool.objects.create(name=f"audit-{round_}-{int(audited)}")
            items = PoolItem.objects.bulk_create(
                PoolItem(
                    pool=pool,
                    model_name="m",
                    dataset="misgendered",
                    setting="pre",
                    pronoun="xe",
                    template="t",
                    context="c",
                    continuation="The man said xe was late.",
                    heuristic_correct=True,
                )
                for _ in range(args.saves)
            )
            Assignment.objects.bulk_create(
                Assignment(pool=pool, item=item, annotator=user, position=n) for n, item in enumerate(items)
            )
            way = "audited" if audited else "plain"
            for kind, label, spans in (("first", "correct", []), ("revise", "misgendering", [[4, 7]])):
                started = time.perf_counter()
                for item in items:
                    saving.annotation_submit(
                        user=user, public_id=item.public_id, label=label, extraneous=bool(spans), spans=spans
                    )
                timings[f"{kind}_{way}"].append((time.perf_counter() - started) / len(items) * 1000)
    saving._audit = audit
    result = {key: round(statistics.median(values), 3) for key, values in timings.items()}
    for kind in ("first", "revise"):
        result[f"{kind}_audit_ms"] = round(result[f"{kind}_audited"] - result[f"{kind}_plain"], 3)
    print(json.dumps({"saves": args.saves, "rounds": args.rounds, **result}))


if __name__ == "__main__":
    main()
