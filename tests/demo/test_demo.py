"""The demo app: the hand-written pool is ready as soon as `load_demo` returns, the live job is only queued, the
live pool is drawn when the demo jobs finish, and the demo logins survive a restart."""

from __future__ import annotations

import ast
import io
import os
import stat
import subprocess
import sys
from contextlib import contextmanager

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import modify_settings, override_settings
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, Pool
from demo import services as demo
from generation.models import DEFAULT_MODEL_NAME, Dataset, Job, JobStatus, LanguageModel
from generation.signals import job_finished
from tests.annotation.factories import annotator_named
from tests.factories import (
    DatasetFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    TemplateFactory,
)


def demo_job(dataset_name: str, *, status: str) -> Job:
    """A demo-like job of the default model: two instances per pronoun (the pool takes one), five samples each."""
    dataset = DatasetFactory(name=dataset_name, kind="ruff" if "ruff" in dataset_name else "misgendered")
    model = LanguageModel.objects.filter(name=DEFAULT_MODEL_NAME).first() or LanguageModelFactory(
        name=DEFAULT_MODEL_NAME
    )
    job = GenerationJobFactory(
        model=model, dataset=dataset, samples=5, status=status, settings=list(demo.LIVE_SETTINGS)
    )
    for pronoun in job.generation_run.pronouns:
        for n in range(2):
            instance = InstanceFactory(template=TemplateFactory(dataset=dataset), pronoun=pronoun, name=f"P{n}")
            for setting in job.generation_run.settings:
                for index in range(5):
                    GenerationFactory(job=job, instance=instance, setting=setting, sample_index=index)
    return job


@contextmanager
def demo_app():
    """The demo app installed for the block: by the embedded default (SQLite) it is already; on PostgreSQL the tests
    install it themselves."""
    if apps.is_installed("demo"):
        yield
        return
    with modify_settings(INSTALLED_APPS={"append": "demo"}):
        yield


@pytest.fixture(autouse=True)
def demo_installed(settings, tmp_path):
    """The demo app is installed (`demo_app`). Its logins go to a throwaway file, never to the checkout's var/."""
    settings.DEMO_LOGINS_FILE = tmp_path / "demo-logins.json"
    with demo_app():
        yield


@pytest.fixture(scope="class")
def demo_loaded_built(class_db, tmp_path_factory) -> tuple[str, str]:
    """`load_demo --no-generate` run once for the class that asks for it (`class_db`): its tests see the loaded demo,
    while the other tests, which run `load_demo` themselves, never do. (What the command printed, the text of the
    logins file it wrote.)"""
    logins = tmp_path_factory.mktemp("demo") / "demo-logins.json"
    printed = io.StringIO()
    with class_db(), demo_app(), override_settings(DEMO_LOGINS_FILE=logins):
        call_command("load_demo", "--no-generate", stdout=printed)
    return printed.getvalue(), logins.read_text(encoding="utf-8")


@pytest.fixture
def demo_loaded(demo_loaded_built, db, settings) -> str:
    """The class's loaded demo, its logins file copied to this test's (owner-only, as `load_demo` writes it): as a
    test finds the demo after running `load_demo --no-generate` itself. Returns what that command printed."""
    printed, logins = demo_loaded_built
    settings.DEMO_LOGINS_FILE.write_text(logins, encoding="utf-8")
    settings.DEMO_LOGINS_FILE.chmod(0o600)
    return printed


@pytest.fixture
def demo_annotators(db):
    return [annotator_named(name) for name in demo.ANNOTATORS]


def test_it_draws_the_live_pool_only_once_the_live_demo_job_has_finished(demo_annotators):
    job = demo.live_job_record(job=demo_job("demo-misgendered", status=JobStatus.RUNNING))
    job_finished.send(sender=Job, job_id=job.pk)
    assert not Pool.objects.filter(name=demo.LIVE_POOL).exists()

    Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job_finished.send(sender=Job, job_id=job.pk)
    pool = Pool.objects.get(name=demo.LIVE_POOL)
    # One instance with its 5 samples per model x dataset x setting x pronoun: 1 x 1 x 4 x 5.
    assert pool.items.count() == 20
    assert set(pool.items.values_list("setting", flat=True)) == {"pre"}
    per_annotator = {
        name: Assignment.objects.filter(pool=pool, annotator__username=name).count() for name in demo.ANNOTATORS
    }
    assert per_annotator == {"annotator1": 15, "annotator2": 15}  # 20 items, 10 of them for both

    job_finished.send(sender=Job, job_id=job.pk)  # a second signal draws nothing more
    assert Pool.objects.filter(name__startswith="demo").count() == 1
    assert pool.items.count() == 20


def test_it_ignores_jobs_that_are_not_the_demos(demo_annotators):
    demo.live_job_record(job=demo_job("demo-misgendered", status=JobStatus.DONE))
    other = demo_job("misgendered", status=JobStatus.DONE)
    job_finished.send(sender=Job, job_id=other.pk)
    assert not Pool.objects.filter(name=demo.LIVE_POOL).exists()


@pytest.mark.django_db
def test_load_demo_makes_the_hand_written_pool_ready_and_only_queues_the_live_job(capsys):
    call_command("load_demo")
    output = capsys.readouterr().out
    pool = Pool.objects.get(name=demo.SHIPPED_POOL)
    assert pool.items.count() == 48
    assert set(pool.items.values_list("setting", flat=True)) == {"pre", "post"}
    assert set(pool.items.values_list("dataset", flat=True)) == {"misgendered", "ruff"}
    for name in demo.ANNOTATORS:
        assert Assignment.objects.filter(pool=pool, annotator__username=name).count() == 32
    jobs = Job.objects.filter(generation_run__dataset__name__in=demo.DATASETS, model__name=DEFAULT_MODEL_NAME)
    # One job: one instance per pronoun x one setting x 5 samples, small enough to finish within minutes on a busy CPU.
    assert list(
        jobs.values_list("generation_run__dataset__name", "status", "total_items", "generation_run__settings")
    ) == [("demo-misgendered", JobStatus.QUEUED, 20, ["pre"])]
    assert not jobs.filter(generations__isnull=False).exists()
    assert "/generation/jobs/" in output

    call_command("load_demo")
    assert "pool demo: ready (48 items)" in capsys.readouterr().out
    assert pool.items.count() == 48 and jobs.count() == 1
    assert Assignment.objects.filter(pool=pool).count() == 64


def _printed_logins(output: str) -> dict[str, str]:
    rows = [line.split() for line in output.splitlines() if line.startswith("  ")]
    return {row[1]: row[2] for row in rows if len(row) == 3 and row[1] in dict(demo.DEMO_USERS)}


@pytest.mark.django_db
def test_it_keeps_the_demo_logins_in_a_private_file_and_prints_them_again_on_each_start(capsys, settings):
    call_command("load_demo", "--no-generate")
    first = _printed_logins(capsys.readouterr().out)
    assert set(first) == {"admin", "researcher", "annotator1", "annotator2"}
    logins_file = settings.DEMO_LOGINS_FILE
    assert stat.S_IMODE(logins_file.stat().st_mode) == 0o600
    annotator = get_user_model().objects.get(username="annotator1")
    assert annotator.check_password(first["annotator1"])
    token = Token.objects.create(user=annotator)
    password_hash = annotator.password

    call_command("load_demo", "--no-generate")
    output = capsys.readouterr().out
    assert _printed_logins(output) == first
    assert str(logins_file) in output and "--new-passwords" in output
    # A restart leaves the users alone: same stored hash (sessions stay valid), API token not revoked.
    annotator.refresh_from_db()
    assert annotator.password == password_hash
    assert Token.objects.filter(pk=token.pk).exists()


@pytest.mark.django_db
def test_it_makes_new_demo_passwords_only_when_asked(capsys, settings):
    call_command("load_demo", "--no-generate")
    first = _printed_logins(capsys.readouterr().out)
    call_command("load_demo", "--no-generate", "--new-passwords")
    second = _printed_logins(capsys.readouterr().out)
    assert set(second) == set(first) and all(second[name] != first[name] for name in first)
    assert get_user_model().objects.get(username="researcher").check_password(second["researcher"])
    assert stat.S_IMODE(settings.DEMO_LOGINS_FILE.stat().st_mode) == 0o600
    call_command("load_demo", "--no-generate")
    assert _printed_logins(capsys.readouterr().out) == second


@pytest.mark.django_db
def test_it_narrows_a_logins_file_made_with_a_wider_mode(capsys, settings):
    settings.DEMO_LOGINS_FILE.write_text('{"admin": "kept-password-1"}\n')
    settings.DEMO_LOGINS_FILE.chmod(0o644)
    call_command("load_demo", "--no-generate")
    assert _printed_logins(capsys.readouterr().out)["admin"] == "kept-password-1"
    assert stat.S_IMODE(settings.DEMO_LOGINS_FILE.stat().st_mode) == 0o600


def test_the_demo_data_writes_the_pronoun_declaration_cleanly():
    """MISGENDERED's released text keeps `Name/'s`; the demo is ours and reads `Sasha's pronouns`."""
    for path in demo.DEMO_DIR.iterdir():
        if path.is_file() and path.suffix in {".csv", ".tsv", ".jsonl"}:
            assert "/'s" not in path.read_text(encoding="utf-8"), path.name
    assert "Sasha's pronouns are she/her/hers." in (demo.DEMO_DIR / "generations_pre.csv").read_text()


def test_annotation_no_longer_listens_to_the_end_of_a_job():
    """The demo is its own app: `annotation` neither imports it nor subscribes to generation's `job_finished`."""
    root = demo.DEMO_DIR.parent
    for path in (root / "annotation").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "job_finished" not in source, path
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(name == "demo" or name.startswith("demo.") for name in names), path


@pytest.mark.parametrize(
    ("database_url", "installed"),
    [("sqlite:///{tmp}/concord.sqlite3", True), ("postgres://postgres@127.0.0.1:5432/concord_unused", False)],
)
@pytest.mark.slow  # starts Django in a process for each case; the full suite runs it
def test_the_demo_app_is_installed_by_the_embedded_default_only(tmp_path, database_url, installed):
    env = {k: v for k, v in os.environ.items() if k not in {"CONCORD_DEMO", "CELERY_BROKER_URL"}}
    env |= {"DATABASE_URL": database_url.format(tmp=tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    probe = "import django; django.setup(); from django.apps import apps; print(apps.is_installed('demo'))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=demo.DEMO_DIR.parent, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(installed)


def test_the_live_pool_follows_the_demos_own_job_not_a_newer_one_an_admin_cancelled(demo_annotators):
    own = demo_job("demo-misgendered", status=JobStatus.RUNNING)
    demo.live_job_record(job=own)
    admins = GenerationJobFactory(model=own.model, dataset=own.dataset, status=JobStatus.CANCELLED)
    job_finished.send(sender=Job, job_id=admins.pk)
    assert not Pool.objects.filter(name=demo.LIVE_POOL).exists()

    Job.objects.filter(pk=own.pk).update(status=JobStatus.DONE)
    job_finished.send(sender=Job, job_id=own.pk)

    pool = Pool.objects.get(name=demo.LIVE_POOL)
    assert set(pool.items.values_list("generation__job", flat=True)) == {own.pk}


@pytest.mark.django_db
def test_load_demo_records_its_own_job_once(capsys):
    call_command("load_demo")
    [job] = demo.live_jobs()
    other = GenerationJobFactory(model=job.model, dataset=job.dataset, status=JobStatus.CANCELLED)
    call_command("load_demo")
    assert demo.live_jobs() == [job] and other.pk > job.pk
    assert Job.objects.filter(generation_run__dataset=job.dataset).count() == 2


@pytest.mark.django_db
def test_the_pool_pages_say_what_the_live_pool_waits_for(client, researcher, annotator, capsys):
    call_command("load_demo")
    [job] = demo.live_jobs()
    client.force_login(researcher)

    page = client.get("/pools/").content.decode()

    assert "demo-live" in page and f"job {job.pk}</a>" in page
    assert "queued: it starts when the server" in page and "0 of 20 continuations" in page

    Job.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    assert "cancelled: the pool will not appear" in client.get("/pools/").content.decode()

    Pool.objects.create(name=demo.LIVE_POOL, labels=["correct"])
    assert 'id="demo-live-waiting"' not in client.get("/pools/").content.decode()


@pytest.mark.django_db
def test_the_home_page_says_plainly_that_the_demos_model_is_a_toy(client, researcher):
    client.force_login(researcher)
    page = client.get("/").content.decode()
    assert 'id="demo-about"' in page and "is <strong>a toy</strong>" in page and "demo-features" in page


@pytest.mark.django_db
class TestTheLoadedDemo:
    """Tests that start from the demo as `load_demo --no-generate` leaves it (`demo_loaded`)."""

    def test_load_demo_without_generation_queues_nothing(self, demo_loaded):
        assert Pool.objects.get(name=demo.SHIPPED_POOL).items.count() == 48
        # only finished records of what the demo wrote: the hand-written texts of demo-features and demo-judged, and the
        # demo judge's run over the latter (an external judge's): nothing queued, no model run
        assert sorted(Job.objects.values_list("model__name", "kind", "status")) == [
            (demo.HAND_WRITTEN, "generation", JobStatus.DONE),
            (demo.HAND_WRITTEN, "generation", JobStatus.DONE),
            ("external-demo-judge", "judge", JobStatus.DONE),
        ]

    def test_load_demo_imports_a_templates_dataset_with_ey_and_fae(self, demo_loaded):

        dataset = Dataset.objects.get(name=demo.TEMPLATES_DATASET)
        assert dataset.kind == "templates"
        families = list(dict.fromkeys(dataset.pronoun_forms.order_by("pk").values_list("base", flat=True)))
        assert families == ["he", "she", "they", "xe", "ey", "fae"]
        assert dataset.instances.count() == 5 * 6 * 2
        assert f"dataset {demo.TEMPLATES_DATASET}: 60 instances" in demo_loaded

    def test_the_demo_shows_a_qualification_round_gold_items_and_distractor_items(self, demo_loaded, capsys):
        from annotation.models import GOLD, STUDY, TRAINING
        from annotation.referents import item_people

        assert "pool demo-features: made" in demo_loaded
        pool = Pool.objects.get(name=demo.FEATURES_POOL)

        kinds = {kind: pool.items.filter(kind=kind).count() for kind in (TRAINING, GOLD, STUDY)}
        assert kinds == {TRAINING: 4, GOLD: 3, STUDY: 4 + len(demo.DISTRACTOR_CONTINUATIONS)}
        assert pool.pass_mark == 0.75
        assert all(item.explanation for item in pool.items.filter(kind=TRAINING))
        for name in demo.ANNOTATORS:  # everyone meets the training and the gold items
            mine = Assignment.objects.filter(pool=pool, annotator__username=name)
            assert mine.filter(item__kind=TRAINING).count() == 4 and mine.filter(item__kind=GOLD).count() == 3

        distractor_items = [item for item in pool.items.filter(kind=STUDY) if item_people(item)]
        assert len(distractor_items) == 3
        people = item_people(distractor_items[0])
        assert [person["role"] for person in people["people"]] == ["target", "other"]
        words = {token["word"].lower() for item in distractor_items for token in item_people(item)["pronoun_tokens"]}
        assert {"xe", "she", "they"} <= words  # a pronoun for the target, the other person, and one that is unclear

        call_command("load_demo", "--no-generate")  # again: nothing more
        assert "pool demo-features: ready" in capsys.readouterr().out
        assert pool.items.count() == sum(kinds.values())

    def test_an_annotator_of_the_features_pool_starts_with_the_qualification_round(self, demo_loaded, api):
        api.force_authenticate(get_user_model().objects.get(username="annotator1"))

        first = api.get("/api/annotate/next/?pool=demo-features").json()

        assert first["phase"] == "training"

    def test_the_hand_written_texts_model_labels_the_demo_but_no_job_can_run_it(
        self, demo_loaded, client, api, admin_user
    ):
        hand_written = LanguageModel.objects.get(name=demo.HAND_WRITTEN)
        assert hand_written.source_kind == LanguageModel.SourceKind.NONE

        client.force_login(admin_user)
        form = client.get("/generation/jobs/new/").content.decode()
        assert f'value="{DEFAULT_MODEL_NAME}"' in form and demo.HAND_WRITTEN not in form

        api.force_authenticate(admin_user)
        response = api.post("/api/generation-jobs/", {"model": demo.HAND_WRITTEN}, format="json")
        assert response.status_code == 400
        assert "has no weights to run" in str(response.json()["model"])
        assert Job.objects.filter(model=hand_written).count() == 2  # the demo's own finished ones only
        # The demo judge's API model is not offered either, nor its judge for "Judge all": neither can run.
        assert "external-demo-judge" not in form
        response = api.post("/api/generation-jobs/", {"model": "external-demo-judge"}, format="json")
        assert response.status_code == 400 and "has no weights to run" in str(response.json()["model"])

    def test_the_judged_demo_pool_fills_every_judge_section_of_the_report(self, demo_loaded, capsys):
        import numpy as np

        from analysis.services import report_build
        from annotation.models import Annotation
        from demo.judged import DEMO_JUDGE, DEMO_NOTE, DEMO_RATERS, DEMO_RUNNABLE_JUDGE, JUDGED_POOL
        from judging.models import JudgeRun, MachineLabel
        from judging.templatetags.judging_tags import judge_names

        assert f"pool {JUDGED_POOL}: made (40 items of a 72-text job" in demo_loaded
        pool = Pool.objects.get(name=JUDGED_POOL)
        job = pool.jobs.get()

        # A job larger than its pool, judged over the whole job by the demo judge, recorded as never run by Concord.
        assert job.generations.count() == 72 > pool.items.count() == 40
        run = JudgeRun.objects.get(source_job=job)
        assert run.judge.name == DEMO_JUDGE and run.judge.external and "No model produced them" in run.judge.description
        assert MachineLabel.objects.filter(run=run).count() == 72
        # Three raters label every item; every label says it is demo data, and no rater can log in.
        annotations = Annotation.objects.filter(item__pool=pool)
        assert annotations.count() == 3 * 40 and set(annotations.values_list("notes", flat=True)) == {DEMO_NOTE}
        for username in DEMO_RATERS:
            assert not get_user_model().objects.get(username=username).has_usable_password()
        # "Judge all" offers a judge Concord can run (the default model), not the external demo judge.
        assert judge_names() == [DEMO_RUNNABLE_JUDGE]

        report = report_build(pool=pool)

        (verdict,) = report["judge_verdict"]
        assert verdict["alt_test"]["tested"] == 3 and verdict["alt_test"]["passed"] is not None
        ceiling = next(row for row in verdict["agreement"] if row["against"] == "human_ceiling")
        assert ceiling["n"] == 3  # every pair shares 40 items, over the 30 a pair needs
        assert verdict["selective"]["threshold"] is not None and 0 < verdict["selective"]["coverage_job"] < 1
        assert [row["guideline_version"] for row in report["by_guideline_version"]] == [1, 2]
        rates = report["prediction_powered"]
        assert rates and all(row["N"] > 0 and row["n"] > 0 for row in rates)
        # The human side of the rates, checked by hand: the majority label of the three raters, averaged within each
        # context (instance x setting, the unit), then over the contexts.
        overall = next(row for row in rates if row["pronoun"] == "all")
        by_context: dict[tuple, list[bool]] = {}
        for item in pool.items.select_related("generation"):
            labels = list(annotations.filter(item=item).values_list("label", flat=True))
            context = (item.generation.instance_id, item.setting)
            by_context.setdefault(context, []).append(max(set(labels), key=labels.count) == "misgendering")
        assert overall["human_rate"] == pytest.approx(np.mean([np.mean(rows) for rows in by_context.values()]))

        call_command("load_demo", "--no-generate")  # again: nothing new
        assert JudgeRun.objects.count() == 1 and Annotation.objects.filter(item__pool=pool).count() == 120

    def test_the_verdict_and_the_quality_page_say_which_pairs_the_human_ceiling_averages(
        self, demo_loaded, client, researcher
    ):
        from analysis.selectors.verdict import MIN_ITEMS
        from analysis.services import report_build
        from demo.judged import JUDGED_POOL

        pool = Pool.objects.get(name=JUDGED_POOL)
        report_build(pool=pool)
        client.force_login(researcher)

        report = client.get(f"/reports/{pool.name}/").content.decode()
        quality = client.get(f"/pools/{pool.name}/quality/").content.decode()

        assert f"mean over 3 annotator pairs sharing at least {MIN_ITEMS} study items" in report
        assert "the annotator quality page lists every pair" in report
        assert f"averages only the pairs\n    that share at least {MIN_ITEMS}" in quality
