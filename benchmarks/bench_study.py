"""Time the study bundle of a paper-sized study: `export_study`, then `verify_study` on an empty database.

    python benchmarks/bench_study.py [--database-url postgres://postgres@127.0.0.1:5432/concord_bench_study]

Builds, in its own database, 6 models x both datasets, a finished job per model and dataset with 5 instances per
pronoun, 5 samples x 2 settings each (2,400 generations) and their probability results; the 2,400-item pool drawn
from them (25 per model x dataset x setting x pronoun); three annotators, 200 items rated by all three and every
other item by one (2,800 annotations, random labels); two guideline versions; and one finished LLM judge run over
every item. Then times the export (in this process: cold, the report computed; then again with the report cached, as
after a researcher opened the report page), the report alone, and `manage.py verify_study` (a new process
on a second, empty database: Django's start, the import, the report recomputed with its repetition rates, the
comparison). Prints one JSON line; the goals are export < 10 s and verify < 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ["llama-70b", "llama-8b", "mixtral-8x22b", "mixtral-8x7b", "olmo-13b", "olmo-7b"]
PRONOUNS = ["he", "she", "they", "xe"]
INSTANCES = 5
SAMPLES = 5
OVERLAP = 200
LABELS = ["correct", "misgendering", "no_pronoun"]
WORDS = "the nurse said that she would be home soon and they went to market with xe his her bread".split()


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/concord_bench_study"),
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="/tmp/concord-bench-study.zip")
    return parser.parse_args()


def _recreate(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _text(rng) -> str:
    return " ".join(rng.choice(WORDS, size=12))


def _build(rng) -> dict:
    from django.db import transaction

    from accounts.roles import ANNOTATOR, RESEARCHER
    from accounts.services import user_create_or_update
    from annotation.models import Annotation, Assignment
    from annotation.services.assignment import assignments_create
    from annotation.services.guidelines import pool_guidelines_set
    from annotation.services.pool import pool_sample
    from generation.jobs.services import job_record
    from generation.models import Dataset, Generation, Instance, Job, LanguageModel, ProbResult, Template
    from generation.parameters import JobParameters
    from judging.models import MachineLabel
    from judging.services.judges import judge_add
    from judging.services.runs import judge_run_create

    with transaction.atomic():
        models = LanguageModel.objects.bulk_create(
            LanguageModel(name=name, source_kind="hub", source=f"bench/{name}") for name in MODELS
        )
        jobs = []
        for kind in ("misgendered", "ruff"):
            dataset = Dataset.objects.create(name=f"bench-{kind}", kind=kind, source="synthetic", import_signature="x")
            instances = []
            for pronoun in PRONOUNS:
                for n in range(INSTANCES):
                    template = Template.objects.create(
                        dataset=dataset,
                        source_id=f"{pronoun}{n}",
                        line=n,
                        text="{name} [MASK]",
                        mask="[MASK]",
                        form="nom",
                    )
                    instances.append(
                        Instance(
                            dataset=dataset,
                            template=template,
                            pronoun=pronoun,
                            name=f"P{n}",
                            text=f"P{n} [MASK] went home.",
                            correct_form=pronoun,
                            ordinal=len(instances),
                        )
                    )
            Instance.objects.bulk_create(instances)
            for model in models:
                job = job_record(
                    params=JobParameters(
                        model=model, dataset=dataset, pronouns=PRONOUNS, settings=["pre", "post"], samples=SAMPLES
                    ),
                    units=len(instances),
                    items=len(instances) * 2 * SAMPLES,
                )
                jobs.append(job)
                ProbResult.objects.bulk_create(
                    ProbResult(
                        job=job,
                        instance=instance,
                        losses={p: float(rng.random()) for p in PRONOUNS},
                        prediction=instance.pronoun,
                        correct=bool(rng.random() < 0.7),
                    )
                    for instance in instances
                )
                Generation.objects.bulk_create(
                    Generation(
                        job=job,
                        instance=instance,
                        setting=setting,
                        sample_index=index,
                        context=f"P{instance.ordinal} ",
                        continuation=_text(rng),
                        heuristic_correct=bool(rng.random() < 0.6),
                        first_pronoun=instance.pronoun,
                    )
                    for instance in instances
                    for setting in ("pre", "post")
                    for index in range(SAMPLES)
                )
        pool = pool_sample(
            name="paper", job_ids=[job.pk for job in jobs], instances=INSTANCES, per_cell=25, seed=7
        ).pool
        people = [user_create_or_update(username=f"bench-ann-{i}", role=ANNOTATOR, password="x")[0] for i in range(3)]
        researcher = user_create_or_update(username="bench-res", role=RESEARCHER, password="x")[0]
        pool_guidelines_set(pool=pool, text="# Guidelines\nversion one", user=researcher)
        assignments_create(pool=pool, usernames=[p.username for p in people], overlap=OVERLAP, raters=3, seed=1)
        assignments = list(Assignment.objects.filter(pool=pool).order_by("pk"))
        Annotation.objects.bulk_create(
            Annotation(
                item_id=a.item_id,
                annotator_id=a.annotator_id,
                label=LABELS[int(rng.integers(0, 3))],
                extraneous=bool(rng.random() < 0.1),
                seconds=float(rng.uniform(2, 30)),
                guideline_version=1 if n % 2 else None,
            )
            for n, a in enumerate(assignments)
        )
        Assignment.objects.filter(pool=pool).update(annotated=True)
        pool_guidelines_set(pool=pool, text="# Guidelines\nversion two", user=researcher)
        Annotation.objects.filter(item__pool=pool, guideline_version=None).update(guideline_version=2)
        judge = judge_add(name="bench-judge", model=models[0])[0]
        run, _ = judge_run_create(pool=pool.name, judge=judge.name, rerun=True, queue=False)
        items = list(pool.items.all())
        MachineLabel.objects.bulk_create(
            MachineLabel(
                run=run,
                item=item,
                label=LABELS[int(rng.integers(0, 3))],
                confidence=float(rng.uniform(0.34, 1.0)),
                scores={label: float(-rng.random()) for label in LABELS},
                prompt="prompt",
            )
            for item in items
        )
        Job.objects.filter(pk=run.job_id).update(status="done", total_units=len(items))
    return {
        "items": pool.items.count(),
        "annotations": Annotation.objects.filter(item__pool=pool).count(),
        "overlap_items": OVERLAP,
        "machine_labels": len(items),
        "generations": Generation.objects.count(),
    }


def main() -> None:
    args = _parse()
    _recreate(args.database_url)
    verify_url = args.database_url + "_verify"
    _recreate(verify_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    built = _build(np.random.default_rng(args.seed))
    # Repetition rates are generation-time work (each job's chunks fill them as they finish), so not the export's.
    from analysis.selectors.automatic import pool_job_ids
    from analysis.services import repetition_rates_fill
    from annotation.models import Pool

    started = time.perf_counter()
    repetition_rates_fill(job_ids=pool_job_ids(pool=Pool.objects.get(name="paper")))
    built["repetition_fill_seconds"] = round(time.perf_counter() - started, 2)

    from django.core.cache import cache

    from analysis.study.export import study_export

    cache.clear()  # the report computed afresh, as on a first export

    started = time.perf_counter()
    manifest = study_export(pool=Pool.objects.get(name="paper"), out=args.out)
    export_seconds = time.perf_counter() - started
    started = time.perf_counter()
    study_export(pool=Pool.objects.get(name="paper"), out=args.out)  # the report now cached, as after a page view
    export_cached_seconds = time.perf_counter() - started
    from analysis.services import report_build_uncached

    started = time.perf_counter()
    report_build_uncached(pool=Pool.objects.get(name="paper"))
    report_seconds = time.perf_counter() - started

    env = {**os.environ, "DATABASE_URL": verify_url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", "verify_study", args.out], cwd=ROOT, env=env, capture_output=True, text=True
    )
    verify_seconds = time.perf_counter() - started
    outcome = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {"error": done.stderr}
    print(
        json.dumps(
            {
                **built,
                "bundle_bytes": Path(args.out).stat().st_size,
                "figures": manifest["report"]["figures"],
                "export_seconds": round(export_seconds, 2),
                "export_report_cached_seconds": round(export_cached_seconds, 2),
                "report_alone_seconds": round(report_seconds, 2),
                "verify_seconds": round(verify_seconds, 2),
                "verify_exit": done.returncode,
                "verify_equal": outcome.get("equal"),
                "verify_differ": len(outcome.get("differ", [])) if "differ" in outcome else outcome,
            }
        )
    )


if __name__ == "__main__":
    main()
