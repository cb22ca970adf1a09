"""Time the JSON report of a paper-scale study, or the report page of a demo-scale one, on PostgreSQL.

    python benchmarks/bench_report.py [--runs 5] [--database-url postgres://postgres@127.0.0.1:5432/concord_bench_report]
    python benchmarks/bench_report.py --scale demo [--runs 5]

`--scale demo` builds 4 models x both datasets at 200 instances each (16,000 generations) and a 320-item pool with
80 items annotated twice, then times the report page as a researcher's browser loads it: the HTML and every figure it
shows (SVG), cold (empty cache) and warm (`page_*` figures), then after one new annotation (the data changed).

Builds (from scratch, in its own database) 6 models x both datasets at full size (MISGENDERED 3,000 instances,
RUFF 7,200), probability results for every instance, 5 samples x 2 settings per instance (612,000 generations),
and the 2,400-item pool (25 per model x dataset x setting x pronoun) with 200 items annotated twice. The rows are
synthetic (random text, verdicts drawn per model and pronoun) and written with COPY / bulk_create.

Then fills the repetition-rate cache as the generation workers do when each chunk finishes (timed on its own: it is
generation-time work, spread over the jobs' runtime), and times the JSON report over several runs. Prints one JSON
object with the timings in seconds; `report_seconds` (each computed afresh: the report cache emptied first) are the
figures that the 3 s target is about; `report_warm_seconds` are served from the report cache (data unchanged).

`--reuse` keeps a study built by an earlier run (and its repetition rates) rather than building it again.
`--resamples-side-by-side` then times cold reports taking turns: with the bootstrap's resamples kept per size
(`analysis.metrics.resampling`, emptied before each report) and with none kept, every interval drawing its resamples
afresh and gathering its values (the code before they were kept), checking that both give the same JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ["llama-70b", "llama-8b", "mixtral-8x22b", "mixtral-8x7b", "olmo-13b", "olmo-7b"]
PRONOUNS = ["he", "she", "they", "xe"]
SETTINGS = ["pre", "post"]
SAMPLES = 5
SIZES = {"misgendered": 3000, "ruff": 7200}
PER_CELL = 25
OVERLAP = 200
VOCAB = (
    "the a nurse teacher said that would be off work in an hour and went home to market bread was very "
    "diligent school taught name book published learn more about friend person because they she he xe his her "
    "them xem xyr their him it is was not of for with at on"
).split()


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed report runs after the cold one")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL"),
        help="default: postgres://postgres@127.0.0.1:5432/concord_bench_report (_demo appended for --scale demo)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", choices=["paper", "demo"], default="paper")
    parser.add_argument("--reuse", action="store_true", help="keep the study an earlier run built in the database")
    parser.add_argument(
        "--resamples-side-by-side", action="store_true", help="cold reports with resamples kept and not"
    )
    return parser.parse_args()


def _demo_scale() -> None:
    """A demo-scale study: 4 models, 200 instances per dataset, 5 items per cell (320), 80 annotated twice."""
    global MODELS, SIZES, PER_CELL, OVERLAP
    MODELS = MODELS[:4]
    SIZES = {"misgendered": 200, "ruff": 200}
    PER_CELL = 5
    OVERLAP = 80


def _ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup(url: str) -> None:
    _ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _copy(table: str, columns: list[str], rows) -> None:
    from django.db import connection

    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT COALESCE(MAX(id), 1) FROM {table}))"
        )


def _build(seed: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    rng = np.random.default_rng(seed)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE analysis_repetitionrate, annotation_pool, annotation_poolitem, generation_generation, "
            "generation_probresult, generation_job, generation_instance, generation_template, "
            "generation_dataset, generation_languagemodel RESTART IDENTITY CASCADE"
        )
    get_user_model().objects.filter(username__startswith="bench-").delete()
    started = time.perf_counter()
    with transaction.atomic():
        jobs, instances = _build_jobs()
        prob_rows, gen_rows, gen_meta = _build_outputs(rng, jobs, instances)
        items = _build_pool(rng, seed, jobs, gen_rows, gen_meta)
        annotations = _build_annotations(rng, items)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "build_seconds": round(time.perf_counter() - started, 2),
        "generations": len(gen_rows),
        "prob_results": len(prob_rows),
        "pool_items": len(items),
        "annotations": annotations,
    }


def _build_jobs() -> tuple[list, dict[str, list]]:
    """The models, one dataset per kind with its templates and instances, and a finished job per model and dataset."""
    from generation.jobs.services import job_record
    from generation.models import Dataset, Instance, LanguageModel, Template
    from generation.parameters import JobParameters

    models = LanguageModel.objects.bulk_create(
        [LanguageModel(name=m, source_kind="hub", source=f"bench/{m}") for m in MODELS]
    )
    instances: dict[str, list] = {}
    datasets = {}
    for kind, size in SIZES.items():
        dataset = Dataset.objects.create(name=f"bench-{kind}", kind=kind, source="bench", import_signature="bench")
        datasets[kind] = dataset
        n_templates = size // len(PRONOUNS) if kind == "ruff" else 50
        draws = size // (n_templates * len(PRONOUNS))
        templates = Template.objects.bulk_create(
            [
                Template(
                    dataset=dataset,
                    source_id=f"t{i}",
                    line=i + 2,
                    text="{name} baked. [MASK] sold it.",
                    mask="[MASK]",
                    form="nom",
                )
                for i in range(n_templates)
            ]
        )
        rows = [
            Instance(
                dataset=dataset,
                template=t,
                pronoun=pronoun,
                draw=draw,
                name="Robin",
                text="Robin baked. [MASK] sold it.",
                correct_form=pronoun,
            )
            for t in templates
            for pronoun in PRONOUNS
            for draw in range(draws)
        ]
        for ordinal, row in enumerate(rows):
            row.ordinal = ordinal
        instances[kind] = Instance.objects.bulk_create(rows, batch_size=5000)
    jobs = [
        job_record(
            params=JobParameters(model=model, dataset=datasets[kind], pronouns=PRONOUNS, settings=SETTINGS),
            units=0,
            items=0,
        )
        for model in models
        for kind in SIZES
    ]
    return jobs, instances


def _build_outputs(rng, jobs: list, instances: dict[str, list]) -> tuple[list, list, list]:
    """Probability results and generations, with per model x pronoun accuracy rates, written with COPY."""
    from django.utils import timezone

    now = timezone.now()
    prob_rows, gen_rows = [], []
    gen_meta = []  # (id, job index, pronoun, setting, sample index)
    words = np.array(VOCAB)
    for j, job in enumerate(jobs):
        kind = list(SIZES)[j % 2]
        for instance in instances[kind]:
            p_correct = 0.55 if instance.pronoun == "xe" else 0.9
            m_prob = bool(rng.random() < p_correct)
            prob_rows.append(
                (len(prob_rows) + 1, job.id, instance.id, json.dumps({"he": 3.0}), instance.pronoun, m_prob)
            )
            for setting in SETTINGS:
                g_correct = p_correct - (0.2 if setting == "pre" else 0.05)
                verdicts = rng.random(SAMPLES) < g_correct
                lengths = rng.integers(30, 55, SAMPLES)
                for s in range(SAMPLES):
                    gen_id = len(gen_rows) + 1
                    text = " " + " ".join(words[rng.integers(0, len(words), lengths[s])]) + "."
                    row = (gen_id, job.id, instance.id, setting, s, "Robin baked. ", text, bool(verdicts[s]), "")
                    gen_rows.append((*row, None, now))
                    gen_meta.append((gen_id, j, instance.pronoun, setting, s))
    _copy("generation_probresult", ["id", "job_id", "instance_id", "losses", "prediction", "correct"], prob_rows)
    _copy(
        "generation_generation",
        [
            "id", "job_id", "instance_id", "setting", "sample_index", "context", "continuation",
            "heuristic_correct", "first_pronoun", "first_pronoun_offset", "created_at",
        ],
        gen_rows,
    )  # fmt: skip
    return prob_rows, gen_rows, gen_meta


def _build_pool(rng, seed: int, jobs: list, gen_rows: list, gen_meta: list) -> list:
    """The 2,400 pool: per model x dataset x setting x pronoun, 5 instances from each of the 5 sample indices."""
    import itertools

    from annotation.models import Pool, PoolItem

    gen_text = {row[0]: row for row in gen_rows}
    pool = Pool.objects.create(name="bench", per_cell=PER_CELL, seed=seed)
    pool.jobs.set(jobs)
    meta = np.array([(m[0], m[1], PRONOUNS.index(m[2]), SETTINGS.index(m[3]), m[4]) for m in gen_meta])
    chosen = []
    cells = itertools.product(range(len(jobs)), range(len(PRONOUNS)), range(len(SETTINGS)), range(SAMPLES))
    for j, p, s, sample in cells:
        mask = (meta[:, 1] == j) & (meta[:, 2] == p) & (meta[:, 3] == s) & (meta[:, 4] == sample)
        chosen += rng.choice(meta[mask, 0], PER_CELL // SAMPLES, replace=False).tolist()
    return PoolItem.objects.bulk_create(
        [
            PoolItem(
                pool=pool,
                generation_id=g,
                model_name=jobs[gen_meta[g - 1][1]].model.name,
                dataset=list(SIZES)[gen_meta[g - 1][1] % 2],
                setting=gen_text[g][3],
                pronoun=gen_meta[g - 1][2],
                sample_index=gen_text[g][4],
                template="Robin baked. [MASK] sold it.",
                context=gen_text[g][5],
                continuation=gen_text[g][6],
                heuristic_correct=gen_text[g][7],
            )
            for g in chosen
        ],
        batch_size=1000,
    )


def _build_annotations(rng, items: list) -> int:
    """Every item annotated once, OVERLAP of them twice (96% agreement on the label, 98% on the extraneous flag), ten
    of those adjudicated. Returns the number of annotations."""
    from django.contrib.auth import get_user_model

    from annotation.models import Adjudication, Annotation

    user_model = get_user_model()
    ana = user_model.objects.create_user(username="bench-ana")
    bo = user_model.objects.create_user(username="bench-bo")
    labels = np.array(["correct", "misgendering", "no_pronoun"])
    annotations = []
    first_labels = rng.choice(labels, len(items), p=[0.7, 0.2, 0.1])
    extraneous = rng.random(len(items)) < 0.1
    for item, label, ext in zip(items, first_labels, extraneous, strict=True):
        annotations.append(Annotation(item=item, annotator=ana, label=label, extraneous=bool(ext)))
    overlap = rng.choice(len(items), OVERLAP, replace=False)
    for i in overlap:
        label = first_labels[i] if rng.random() < 0.96 else rng.choice(labels)
        ext = extraneous[i] if rng.random() < 0.98 else not extraneous[i]
        annotations.append(Annotation(item=items[i], annotator=bo, label=label, extraneous=bool(ext)))
    Annotation.objects.bulk_create(annotations, batch_size=1000)
    Adjudication.objects.bulk_create([Adjudication(item=items[i], label=first_labels[i]) for i in overlap[:10]])
    return len(annotations)


def _time_report(*, cold: bool = True) -> float:
    """One JSON report; `cold` empties the report cache first, so the whole report is computed."""
    return _report(cold=cold)[0]


def _report(*, cold: bool = True) -> tuple[float, str]:
    from django.core.cache import cache

    from analysis.report.exports.render import report_json
    from analysis.services import report_build
    from annotation.models import Pool

    if cold:
        cache.clear()
    started = time.perf_counter()
    body = report_json(report=report_build(pool=Pool.objects.get(name="bench")))
    elapsed = time.perf_counter() - started
    assert json.loads(body)["inter_annotator"]["pronoun_label"]["n_items"] == OVERLAP
    return elapsed, body


def _resamples_side_by_side(runs: int) -> dict:
    """Cold reports taking turns, resamples kept (emptied before each report: what a process's first report costs)
    and none kept (every interval draws afresh); both must give the same JSON."""
    from analysis.metrics import resampling

    kept_bytes = resampling.RESAMPLE_CACHE_BYTES
    timings: dict[str, list[float]] = {"kept": [], "drawn_afresh": []}
    bodies: dict[str, str] = {}
    try:
        for _ in range(runs):
            for name, room in [("kept", kept_bytes), ("drawn_afresh", 0)]:
                resampling.RESAMPLE_CACHE_BYTES = room
                resampling._kept.clear()
                elapsed, body = _report()
                timings[name].append(round(elapsed, 3))
                assert bodies.setdefault(name, body) == body, "a report changed between runs"
    finally:
        resampling.RESAMPLE_CACHE_BYTES = kept_bytes
    assert bodies["kept"] == bodies["drawn_afresh"], "kept resamples changed the report"
    return {
        "resamples_kept_seconds": timings["kept"],
        "resamples_drawn_afresh_seconds": timings["drawn_afresh"],
        "kept_over_afresh_median": round(
            statistics.median(timings["kept"]) / statistics.median(timings["drawn_afresh"]), 3
        ),
    }


def _page_timings(runs: int) -> dict:
    """The report page as a browser loads it: the HTML, then every figure it shows (SVG, `?v=` the version)."""
    import re

    from django.conf import settings
    from django.core.cache import cache
    from django.test import Client

    from accounts.roles import RESEARCHER
    from accounts.services import user_create_or_update
    from annotation.models import Annotation, PoolItem
    from annotation.services.stamp import pool_changed

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    user, _ = user_create_or_update(username="bench-researcher", role=RESEARCHER, password="bench-password")
    client = Client()
    client.force_login(user)

    def load() -> tuple[float, float]:
        started = time.perf_counter()
        response = client.get("/reports/bench/")
        html = time.perf_counter() - started
        assert response.status_code == 200, response.status_code
        images = re.findall(r'<img src="([^"]+\.svg\?v=[0-9a-f]+)"', response.content.decode())
        assert images, "the page shows no figure"
        for src in images:
            image = client.get(src.replace("&amp;", "&"))
            assert image.status_code == 200, (src, image.status_code)
        return html, time.perf_counter() - started

    cache.clear()
    cold = load()
    warm = [load() for _ in range(runs)]
    # One more annotation: a new stamp, so the next load rebuilds the report (figures redrawn).
    item = PoolItem.objects.filter(pool__name="bench").order_by("pk").first()
    Annotation.objects.create(item=item, annotator=user, label="correct")
    pool_changed(pools=[item.pool_id])  # a bare ORM write: the services bump the pool's stamp themselves
    changed = load()
    return {
        "page_cold_html_seconds": round(cold[0], 3),
        "page_cold_with_figures_seconds": round(cold[1], 3),
        "page_warm_html_seconds": [round(x[0], 3) for x in warm],
        "page_warm_with_figures_seconds": [round(x[1], 3) for x in warm],
        "page_warm_html_median_seconds": round(statistics.median(x[0] for x in warm), 3),
        "page_after_new_annotation_html_seconds": round(changed[0], 3),
        "page_after_new_annotation_with_figures_seconds": round(changed[1], 3),
        "page_target_seconds": 1.0,
    }


def main() -> None:
    args = _parse()
    if args.scale == "demo":
        _demo_scale()
    default_url = "postgres://postgres@127.0.0.1:5432/concord_bench_report"
    _setup(args.database_url or default_url + ("_demo" if args.scale == "demo" else ""))
    from analysis.services import repetition_rates_fill
    from annotation.models import Pool
    from generation.models import Job

    built: dict = {}
    if not (args.reuse and Pool.objects.filter(name="bench").exists()):
        built = _build(args.seed)
        started = time.perf_counter()
        for job_id in Job.objects.values_list("id", flat=True):
            repetition_rates_fill(job_ids=[job_id])
        built["repetition_fill_seconds_at_generation_time"] = round(time.perf_counter() - started, 1)
    from bench_annotation import reference_ms  # the machine's speed, before and after

    load_before, reference_before = [round(x, 2) for x in os.getloadavg()], reference_ms()
    side_by_side = _resamples_side_by_side(args.runs) if args.resamples_side_by_side else {}
    runs = [_time_report() for _ in range(args.runs)]
    warm = [_time_report(cold=False) for _ in range(args.runs)]
    page = _page_timings(args.runs) if args.scale == "demo" else {}
    print(
        json.dumps(
            {
                "scale": args.scale,
                "load_average_before": load_before,
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "reference_ms_before": reference_before,
                "reference_ms_after": reference_ms(),
                **built,
                **side_by_side,
                "report_seconds": [round(x, 3) for x in runs],
                "report_median_seconds": round(statistics.median(runs), 3),
                "target_seconds": 3.0,
                "report_warm_seconds": [round(x, 3) for x in warm],
                **page,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
