"""A study bundle a reviewer can check (docs/domain.md, 'A study others can check'): it verifies wherever it runs (in a
database of its own), carries every judge run its report reads (over the pool and over one of its jobs), keeps notes
and server paths out, and a crafted or hostile archive ends in "rejected: FILE:LINE: what" with nothing written."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
import re
import stat
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from analysis.study.export import study_export
from analysis.study.figures import figures, figures_compare
from analysis.study.load import study_verify
from analysis.study.tables import TABLES
from annotation.models import Adjudication, Annotation, Pool, PoolItem
from generation.models import Dataset, Job, LanguageModel
from judging.models import Judge, JudgeRun, MachineLabel
from judging.services.judges import judge_add
from tests.analysis.test_study_bundle import export_bytes, rewritten
from tests.factories import LanguageModelFactory
from tests.judging.conftest import finished_run
from tests.judging.verdict_study import build_study

REJECTED = r"^rejected: [\w.-]+(:\d+)?: "
DATA_FILES = [f"{table.name}.jsonl" for table in TABLES]


def read(bundle: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        return archive.read(name)


def rows_of(bundle: bytes, name: str) -> list[dict]:
    return [json.loads(line) for line in read(bundle, name).decode().splitlines() if line.strip()]


def jsonl(rows: list) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def crafted(bundle: bytes, change: dict[str, bytes | str], *, manifest: dict | None = None) -> bytes:
    """The bundle with files replaced and the manifest's SHA-256 and sizes made to match (as an attacker would)."""
    manifest = manifest or json.loads(read(bundle, "manifest.json"))
    for name, data in change.items():
        data = data.encode() if isinstance(data, str) else data
        change[name] = data
        if name in manifest["files"]:
            manifest["files"][name].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    return rezipped(bundle, {**change, "manifest.json": json.dumps(manifest, indent=1).encode()})


def rezipped(bundle: bytes, change: dict[str, bytes]) -> bytes:
    """The archive (deflated) with members replaced, and members not in it added at the end."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bundle)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            target.writestr(name, change.get(name, source.read(name)))
        for name in change.keys() - set(source.namelist()):
            target.writestr(name, change[name])
    return out.getvalue()


def counts() -> dict[str, int]:
    models = [Pool, PoolItem, Annotation, Adjudication, Job, Dataset, Judge, JudgeRun, MachineLabel]
    return {
        **{model.__name__: model.objects.count() for model in models},
        "users": get_user_model().objects.count(),
    }


def clear_everything() -> None:
    """An empty database as far as any study goes."""
    MachineLabel.objects.all().delete()
    JudgeRun.objects.all().delete()
    Pool.objects.all().delete()
    Job.objects.all().delete()
    Judge.objects.all().delete()
    Dataset.objects.all().delete()


def export_path(tmp_path, pool, name="STUDY.zip", **options) -> str:
    path = tmp_path / name
    study_export(pool=pool, out=path, **options)
    return str(path)


@pytest.fixture(scope="module")
def study_built(module_db) -> tuple[Pool, bytes]:
    """The hand-built study of tests/analysis/test_study_bundle.py (a pool run, guidelines, an idle annotator) and
    its bundle, built once per module (`module_db`): every test sees the study's rows, its own writes roll back."""
    from accounts.roles import ANNOTATOR, RESEARCHER
    from tests.analysis.test_study_bundle import study_pool_build
    from tests.conftest import _person

    with module_db():
        pool = study_pool_build(
            annotator=_person("ana", ANNOTATOR),
            second_annotator=_person("bo", ANNOTATOR),
            researcher=_person("rui_researcher", RESEARCHER),
        )
        return pool, export_bytes(pool)


@pytest.fixture
def study_pool(study_built, db) -> Pool:
    """The module's study pool, its record a copy for this test."""
    return copy.deepcopy(study_built[0])


@pytest.fixture
def study_bundle(study_built, db) -> bytes:
    """The bytes of the module's study bundle, as `study_export` wrote them before any test changed the study."""
    return study_built[1]


def judged_build():
    """The judge's-verdict study (tests/judging/verdict_study.py): a judge run over its whole job (`judge --job`)
    whose labels feed the verdict, the prediction-powered rates and the calibration; plus a second judge's run over
    the pool's items."""
    from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME

    smollm2_row = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)[0]
    job_judge = judge_add(name="job-judge", model=smollm2_row)[0]
    built = build_study(judge=job_judge)
    pool_judge = judge_add(name="pool-judge", model=LanguageModelFactory(name="pool-lm"))[0]
    items = list(built.pool.items.order_by("pk"))[:6]
    scores = {"correct": -1.0, "misgendering": -2.0, "no_pronoun": -3.0}
    finished_run(
        judge=pool_judge,
        pool=built.pool,
        labels={item: (label, 0.8, scores) for item, label in zip(items, ["correct", "misgendering"] * 3, strict=True)},
    )
    return built


@pytest.fixture(scope="class")
def judged_built(class_db):
    """`judged_build()` and the bytes `export_bytes` gives for its pool, built once for the class that asks for
    them (`class_db`): its tests see the study, while the tests of the other classes never do (some of them check
    that their study pool is the only one). The export runs in a savepoint rolled back at once, so its pseudonyms and
    audit entry are not left behind."""
    from django.db import transaction

    with class_db():
        built = judged_build()
        with transaction.atomic():
            bundle = export_bytes(built.pool)
            transaction.set_rollback(True)
    return built, bundle


@pytest.fixture
def judged(judged_built, db):
    """The class's judge's-verdict study, its records a copy for this test."""
    return copy.deepcopy(judged_built[0])


@pytest.fixture
def judged_bundle(judged_built, db) -> bytes:
    """The bytes of the class's judged study's bundle, as `study_export` wrote them before any test changed it."""
    return judged_built[1]


@pytest.mark.django_db
class TestRoundTrip:
    def test_export_verify_anywhere_import_and_export_again_give_the_same_figures(
        self, judged, judged_bundle, tmp_path, capsys
    ):
        # a user named like a pseudonym, so that an import must rename its own
        get_user_model().objects.create_user(username="annotator-01")
        bundle = judged_bundle
        first = str(_written(tmp_path, bundle))
        runs = rows_of(bundle, "judge_runs.jsonl")
        assert {(run["pool_id"] is None, run["source_job_id"] is None) for run in runs} == {
            (True, False),
            (False, True),
        }
        labels = rows_of(bundle, "machine_labels.jsonl")
        assert sum(1 for row in labels if row["generation_id"] is not None) == len(judged.generations)
        assert {row["rater"] for row in labels} == {"judge:job-judge", "judge:pool-judge"}
        manifest = json.loads(read(bundle, "manifest.json"))
        assert {judge["name"] for judge in manifest["judges"]} == {"job-judge", "pool-judge"}
        report = json.loads(read(bundle, "report.json"))
        assert any(row.get("judge") == "job-judge" for row in report.get("judge_verdict") or [])

        before = counts()
        call_command("verify_study", first)  # in place: this database holds the study itself
        in_place = json.loads(capsys.readouterr().out)
        assert in_place["differ"] == [] and in_place["figures"] == in_place["equal"] > 300
        assert counts() == before  # the check wrote nothing here

        clear_everything()
        call_command("verify_study", first)  # on an empty database
        empty = json.loads(capsys.readouterr().out)
        assert empty == in_place
        assert not Pool.objects.exists() and not JudgeRun.objects.exists()

        call_command("import_study", first, "--pool", "copy")
        copy = Pool.objects.get(name="copy")
        scopes = {(run.judge.name, run.pool_id is not None) for run in JudgeRun.objects.filter(pool=copy)}
        scopes |= {(run.judge.name, False) for run in JudgeRun.objects.filter(source_job__in=copy.jobs.all())}
        assert scopes == {("pool-judge", True), ("job-judge", False)}
        assert not get_user_model().objects.get(username="annotator-01").annotations.exists()
        again = export_path(tmp_path, copy, "AGAIN.zip")
        compared = figures_compare(bundled=report, recomputed=json.loads(zipfile.ZipFile(again).read("report.json")))
        assert compared["differ"] == [] and compared["figures"] == in_place["figures"]

    def test_without_the_job_run_the_figures_it_feeds_would_differ(self, judged_bundle):
        """The job run's labels are what the verdict and prediction-powered figures read: leaving them out of the
        bundle (as before) makes them differ."""
        bundle = judged_bundle
        job_run_ids = {row["id"] for row in rows_of(bundle, "judge_runs.jsonl") if row["source_job_id"] is not None}
        labels = [row for row in rows_of(bundle, "machine_labels.jsonl") if row["run_id"] not in job_run_ids]
        runs = [row for row in rows_of(bundle, "judge_runs.jsonl") if row["id"] not in job_run_ids]
        stripped = crafted(bundle, {"machine_labels.jsonl": jsonl(labels), "judge_runs.jsonl": jsonl(runs)})

        outcome = study_verify(source=io.BytesIO(stripped))

        assert len(outcome["differ"]) > 10


@pytest.mark.django_db
class TestImportVerifiesFirst:
    def test_a_report_that_does_not_follow_from_the_data_is_refused_unless_accepted(self, study_bundle, tmp_path):
        bundle = study_bundle
        rows = rows_of(bundle, "annotations.jsonl")
        changed = next(row for row in rows if row["label"] == "no_pronoun")
        changed["label"] = "misgendering"
        path = tmp_path / "CHANGED.zip"
        path.write_bytes(crafted(bundle, {"annotations.jsonl": jsonl(rows)}))
        before = counts()

        with pytest.raises(CommandError, match=r"^rejected: report.json: \d+ of \d+ figures differ") as refused:
            call_command("import_study", str(path), "--pool", "changed")

        assert "label_distribution[m1/misgendered/pre/xe].no_pronoun" in str(refused.value)
        assert "--accept-differences" in str(refused.value)
        assert counts() == before
        call_command("import_study", str(path), "--pool", "changed", "--accept-differences")
        assert Annotation.objects.filter(item__pool__name="changed", label="misgendering").count() == 4

    def test_verify_says_the_same_in_place_as_on_an_empty_database(self, study_pool, study_bundle, tmp_path, capsys):
        """Before, the bundle was imported beside the study it came from: new ids, a renamed pseudonym user, and
        figures that differed although nothing had changed."""
        get_user_model().objects.create_user(username="annotator-02")
        path = str(_written(tmp_path, study_bundle))
        call_command("verify_study", path)
        assert json.loads(capsys.readouterr().out)["differ"] == []


@pytest.mark.django_db
class TestPrivate:
    def test_notes_stay_out_unless_asked_for_and_then_the_manifest_warns(self, study_pool, tmp_path):
        Annotation.objects.filter(item__pool=study_pool).update(notes="ask alice@example.org, annotator2 disagrees")
        Adjudication.objects.filter(item__pool=study_pool).update(notes="the researcher decided")
        default = open(export_path(tmp_path, study_pool), "rb").read()  # noqa: SIM115

        text = "\n".join(read(default, name).decode() for name in zipfile.ZipFile(io.BytesIO(default)).namelist())
        for secret in ("alice@example.org", "annotator2", "researcher"):
            assert secret not in text, secret
        manifest = json.loads(read(default, "manifest.json"))
        assert manifest["notes"] is False and manifest["warnings"] == []

        call_command("export_study", "--pool", study_pool.name, "--out", str(tmp_path / "N.zip"), "--include-notes")
        noted = (tmp_path / "N.zip").read_bytes()
        assert {row["notes"] for row in rows_of(noted, "annotations.jsonl")} == {
            "ask alice@example.org, annotator2 disagrees"
        }
        manifest = json.loads(read(noted, "manifest.json"))
        assert manifest["notes"] is True and "notes" in manifest["warnings"][0]
        call_command("import_study", str(tmp_path / "N.zip"), "--pool", "noted")
        assert set(Annotation.objects.filter(item__pool__name="noted").values_list("notes", flat=True)) == {
            "ask alice@example.org, annotator2 disagrees"
        }

    def test_server_paths_become_file_names(self, study_pool, tmp_path):
        source = tmp_path / "secret-server-folder" / "misgendered"
        source.mkdir(parents=True)
        (source / "templates.csv").write_text("a,b\n")
        Dataset.objects.update(source=str(source))
        PoolItem.objects.filter(pool=study_pool).update(source_file="/srv/concord/uploads/batch-7.csv")
        local = LanguageModelFactory(name="local-lm", source_kind="path", source=str(tmp_path / "weights" / "lm"))
        Judge.objects.filter(name="study-judge").update(model=local)

        bundle = export_bytes(study_pool)

        text = "\n".join(read(bundle, name).decode() for name in zipfile.ZipFile(io.BytesIO(bundle)).namelist())
        assert str(tmp_path) not in text and "/srv/concord" not in text
        assert {row["source_file"] for row in rows_of(bundle, "pool_items.jsonl")} == {"batch-7.csv"}
        manifest = json.loads(read(bundle, "manifest.json"))
        assert manifest["datasets"][0]["source"] == "misgendered"
        assert manifest["datasets"][0]["files"][0]["file"] == "templates.csv"
        assert {m["id"] for m in manifest["models"] if m["name"] == "local-lm"} == {"lm"}


@pytest.mark.django_db
class TestHostileArchives:
    @override_settings(CONCORD_STUDY_MAX_FILE_MB=1)
    def test_a_member_over_the_limit_is_refused_before_it_is_read(self, study_bundle, tmp_path, monkeypatch):
        bundle = study_bundle
        zeros = b"\0" * (3 * 1024 * 1024)
        bomb = crafted(bundle, {"generations.jsonl": zeros})
        assert len(bomb) < 100_000  # a small archive, a large member
        opened = []
        monkeypatch.setattr(zipfile.ZipFile, "open", lambda *a, **k: opened.append(a) or pytest.fail("read"))

        with pytest.raises(CommandError, match=r"^rejected: generations.jsonl: \d+ bytes decompressed, over"):
            call_command("verify_study", str(_written(tmp_path, bomb)))
        assert opened == []

    @override_settings(CONCORD_STUDY_MAX_FILE_MB=1, CONCORD_STUDY_MAX_TOTAL_MB=1)
    def test_a_member_that_says_it_is_small_is_read_only_up_to_the_limit(self, study_bundle, tmp_path):
        bundle = study_bundle
        bomb = _lying_sizes(crafted(bundle, {"generations.jsonl": b"\0" * (3 * 1024 * 1024)}), "generations.jsonl")

        with pytest.raises(CommandError, match=r"^rejected: generations.jsonl: "):
            call_command("verify_study", str(_written(tmp_path, bomb)))

    @override_settings(CONCORD_STUDY_MAX_TOTAL_MB=2)
    def test_an_archive_over_the_total_limit_is_refused(self, study_bundle, tmp_path):
        bundle = study_bundle
        big = b"\n" * (1536 * 1024)  # blank lines: valid files, each under the per-file limit
        bomb = crafted(bundle, {"generations.jsonl": big, "instances.jsonl": big})

        with pytest.raises(CommandError, match=r"^rejected: the archive holds \d+ bytes decompressed, over"):
            call_command("import_study", str(_written(tmp_path, bomb)), "--pool", "big")
        assert not Pool.objects.filter(name="big").exists()

    def test_an_unlisted_member_is_refused(self, study_bundle, tmp_path):
        bundle = study_bundle
        extra = rezipped(bundle, {"extra/payload.bin": b"x" * 1000})
        before = counts()

        with pytest.raises(CommandError, match=r"^rejected: extra/payload.bin: not listed in manifest.json"):
            call_command("import_study", str(_written(tmp_path, extra)), "--pool", "extra")
        assert counts() == before

    @pytest.mark.parametrize("name", ["../../x", "/etc/x", "sub/x"])
    def test_a_listed_member_that_is_a_path_is_refused(self, study_bundle, tmp_path, name):
        bundle = study_bundle
        manifest = json.loads(read(bundle, "manifest.json"))
        manifest["files"][name] = {"sha256": "", "bytes": 1}
        path = _written(tmp_path, crafted(bundle, {name: b"x"}, manifest=manifest))
        before = counts()

        for command in (["verify_study", str(path)], ["import_study", str(path), "--pool", "paths"]):
            with pytest.raises(CommandError, match=rf"^rejected: {re.escape(name)}: not a plain file name"):
                call_command(*command)
        assert counts() == before

    def test_a_listed_member_that_is_a_symbolic_link_is_refused(self, study_bundle, tmp_path):
        bundle = study_bundle
        manifest = json.loads(read(bundle, "manifest.json"))
        manifest["files"]["link"] = {"sha256": hashlib.sha256(b"/etc/passwd").hexdigest(), "bytes": 11}
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(bundle)) as source, zipfile.ZipFile(out, "w") as target:
            for name in source.namelist():
                data = json.dumps(manifest).encode() if name == "manifest.json" else source.read(name)
                target.writestr(name, data)
            link = zipfile.ZipInfo("link")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            target.writestr(link, b"/etc/passwd")
        path = _written(tmp_path, out.getvalue())

        for command in (["verify_study", str(path)], ["import_study", str(path), "--pool", "link"]):
            with pytest.raises(CommandError, match=r"^rejected: link: a symbolic link"):
                call_command(*command)
        assert not Pool.objects.filter(name="link").exists()

    def test_a_member_twice_is_refused(self, study_bundle, tmp_path):
        bundle = study_bundle
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(bundle)) as source, zipfile.ZipFile(out, "w") as target:
            for name in source.namelist():
                target.writestr(name, source.read(name))
            with pytest.warns(UserWarning):
                target.writestr("annotations.jsonl", b"")
        with pytest.raises(CommandError, match=r"^rejected: annotations.jsonl: the archive holds this member"):
            call_command("verify_study", str(_written(tmp_path, out.getvalue())))

    def test_the_limits_are_documented(self):
        from pathlib import Path

        operations = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
        assert "STUDY_MAX_FILE_MB" in operations and "STUDY_MAX_TOTAL_MB" in operations


def _written(tmp_path, data: bytes):
    path = tmp_path / f"crafted-{hashlib.sha256(data).hexdigest()[:8]}.zip"
    path.write_bytes(data)
    return path


def _lying_sizes(bundle: bytes, name: str) -> bytes:
    """The archive with the member's uncompressed size written as 10 bytes in both its headers."""
    data = bytearray(bundle)
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        local = archive.getinfo(name).header_offset
    data[local + 22 : local + 26] = (10).to_bytes(4, "little")
    position = 0
    while (position := data.find(b"PK\x01\x02", position)) != -1:  # each central directory entry
        length = int.from_bytes(data[position + 28 : position + 30], "little")
        if data[position + 46 : position + 46 + length].decode() == name:
            data[position + 24 : position + 28] = (10).to_bytes(4, "little")
        position += 4
    return bytes(data)


def _annotations_changed(bundle: bytes, **values) -> bytes:
    rows = rows_of(bundle, "annotations.jsonl")
    rows[0].update(values)
    return crafted(bundle, {"annotations.jsonl": jsonl(rows)})


CRAFTED = {
    "a 200-character pseudonym": lambda b: _annotations_changed(b, annotator="a" * 200),
    "a pseudonym that is an object": lambda b: _annotations_changed(b, annotator={"name": "x"}),
    "a 100-character label": lambda b: _annotations_changed(b, label="m" * 100),
    "a span that ends before it starts": lambda b: _annotations_changed(b, spans=[[5, 2]]),
    "a span of text": lambda b: _annotations_changed(b, spans=[["a", 3]]),
    "a span past the text": lambda b: _annotations_changed(b, spans=[[0, 100000]]),
    "a referent of the wrong shape": lambda b: _annotations_changed(b, referents=[[0, 2]]),
    "seconds as text": lambda b: _annotations_changed(b, seconds="fast"),
    "a reference to no row": lambda b: _annotations_changed(b, item_id=987654),
    "a reference that is an object": lambda b: _annotations_changed(b, item_id={"id": 1}),
    "a report that is a list": lambda b: crafted(b, {"report.json": "[1, 2]"}),
    "pool as a string": lambda b: crafted(b, {}, manifest={**json.loads(read(b, "manifest.json")), "pool": "x"}),
    "a pool name that is not a slug": lambda b: crafted(
        b, {}, manifest={**json.loads(read(b, "manifest.json")), "pool": {"name": "bad name/../x"}}
    ),
    "a row that is a list": lambda b: crafted(b, {"adjudications.jsonl": "[1, 2]\n"}),
    "a confidence over 1": lambda b: crafted(
        b,
        {"machine_labels.jsonl": jsonl([{**row, "confidence": 7.0} for row in rows_of(b, "machine_labels.jsonl")])},
    ),
    "a duplicate row id": lambda b: crafted(
        b,
        {
            "pool_items.jsonl": jsonl(
                [*rows_of(b, "pool_items.jsonl"), {**rows_of(b, "pool_items.jsonl")[0], "public_id": "copy"}]
            )
        },
    ),
    "a duplicate key": lambda b: crafted(
        b,
        {
            "annotations.jsonl": jsonl(
                [*rows_of(b, "annotations.jsonl"), {**rows_of(b, "annotations.jsonl")[0], "id": 10**9}]
            )
        },
    ),
    "two pools": lambda b: crafted(
        b, {"pools.jsonl": jsonl([*rows_of(b, "pools.jsonl"), {**rows_of(b, "pools.jsonl")[0], "id": 10**9}])}
    ),
    "an unknown referent": lambda b: _annotations_changed(b, referents=[[0, 2, "he", "nobody"]]),
    "tags that are an object": lambda b: _annotations_changed(b, tags={"a": 1}),
    "a label set of objects": lambda b: crafted(
        b, {"pools.jsonl": jsonl([{**rows_of(b, "pools.jsonl")[0], "labels": [{}]}])}
    ),
    "scores that are a list": lambda b: crafted(
        b, {"machine_labels.jsonl": jsonl([{**row, "scores": [1]} for row in rows_of(b, "machine_labels.jsonl")])}
    ),
    "job options that are a list": lambda b: crafted(
        b, {"jobs.jsonl": jsonl([{**row, "options": [1]} for row in rows_of(b, "jobs.jsonl")])}
    ),
    "a human verdict rule that does not exist": lambda b: crafted(
        b, {"report.json": json.dumps({**json.loads(read(b, "report.json")), "human_verdict": "nonsense"})}
    ),
    "a created_at that is no date": lambda b: _annotations_changed(b, created_at="yesterday"),
    # Times no reader can hold: year 0 or 10000 once in UTC (OverflowError), or before 1900.
    "a created_at before year 1 in UTC": lambda b: _annotations_changed(b, created_at="0001-01-01T00:00:00+14:00"),
    "a created_at past year 9999 in UTC": lambda b: _annotations_changed(b, created_at="9999-12-31T23:59:59-12:00"),
    "an updated_at before 1900": lambda b: _annotations_changed(b, updated_at="1899-12-31T23:59:59+00:00"),
    "a pool created in year 1": lambda b: crafted(
        b, {"pools.jsonl": jsonl([{**rows_of(b, "pools.jsonl")[0], "created_at": "0001-01-01T00:00:00+14:00"}])}
    ),
    # Nested 100,000 deep: Python's parser would end in a RecursionError.
    "a row nested 100,000 deep": lambda b: crafted(
        b, {"annotations.jsonl": '{"id": 1, "label": ' + "[" * 100_000 + "]" * 100_000 + "}\n"}
    ),
    "a report nested 100,000 deep": lambda b: crafted(b, {"report.json": "[" * 100_000}),
    "a manifest nested 100,000 deep": lambda b: rezipped(b, {"manifest.json": b'{"format": ' + b"[" * 100_000}),
}


@pytest.mark.django_db
class TestCraftedBundles:
    @pytest.mark.parametrize("case", list(CRAFTED))
    def test_each_ends_in_a_rejection_naming_file_and_line_and_writes_nothing(self, study_bundle, tmp_path, case):
        path = _written(tmp_path, CRAFTED[case](study_bundle))
        before = counts()

        for command in (["verify_study", str(path)], ["import_study", str(path), "--pool", "crafted"]):
            with pytest.raises(CommandError, match=REJECTED) as refused:
                call_command(*command)
            assert "Traceback" not in str(refused.value)
        assert counts() == before

    def test_a_row_error_names_its_line(self, study_bundle, tmp_path):
        bundle = study_bundle
        rows = rows_of(bundle, "annotations.jsonl")
        rows[3]["label"] = "m" * 100
        path = _written(tmp_path, crafted(bundle, {"annotations.jsonl": jsonl(rows)}))

        with pytest.raises(CommandError, match=r"^rejected: annotations.jsonl:4: bad label"):
            call_command("verify_study", str(path))

    def test_a_duplicate_item_id_is_refused_rather_than_moving_annotations_to_the_copy(self, study_bundle, tmp_path):
        bundle = CRAFTED["a duplicate row id"](study_bundle)
        lines = len(rows_of(bundle, "pool_items.jsonl"))
        with pytest.raises(CommandError, match=rf"^rejected: pool_items.jsonl:{lines}: id \d+ appears again \(first"):
            call_command("import_study", str(_written(tmp_path, bundle)), "--pool", "dup")

    def test_a_bad_pool_name_on_the_command_line_is_refused(self, study_pool, study_bundle, tmp_path):
        path = str(_written(tmp_path, study_bundle))
        with pytest.raises(CommandError, match=r"^rejected: --pool: pool name 'Bad Name'"):
            call_command("import_study", path, "--pool", "Bad Name")
        assert not Pool.objects.exclude(pk=study_pool.pk).exists()

    def test_a_user_named_like_an_imported_pseudonym_is_left_alone(self, study_bundle, tmp_path):
        for name in ("annotator-01", "annotator-01-twice", "annotator-01-twice-3"):
            get_user_model().objects.create_user(username=name)
        path = str(_written(tmp_path, study_bundle))
        call_command("import_study", path, "--pool", "once")
        call_command("import_study", path, "--pool", "twice")
        for name in ("annotator-01", "annotator-01-twice", "annotator-01-twice-3"):
            assert not get_user_model().objects.get(username=name).annotations.exists()
        assert Annotation.objects.filter(item__pool__name="twice").count() == 10


@pytest.mark.django_db
class TestAnyChangeIsCaught:
    @pytest.mark.parametrize("name", DATA_FILES)
    def test_flipping_one_value_in_any_data_file_makes_the_check_say_differ(self, study_bundle, tmp_path, name):
        bundle = study_bundle
        rows = rows_of(bundle, name)
        if not rows:
            pytest.skip(f"the study has no {name} rows")
        rng = random.Random(f"{name}-flip")
        row = rng.choice(rows)
        key = rng.choice(sorted(key for key in row if key != "id"))
        row[key] = _flipped(row[key])
        path = _written(tmp_path, rewritten(bundle, change={name: jsonl(rows)}))

        with pytest.raises(CommandError, match="differ"):
            call_command("verify_study", str(path))

    @pytest.mark.parametrize("seed", range(4))
    def test_flipping_a_label_moves_figures_even_with_the_hashes_made_consistent(self, study_bundle, seed):
        bundle = study_bundle
        rows = rows_of(bundle, "annotations.jsonl")
        row = random.Random(seed).choice(rows)
        row["label"] = next(label for label in ("correct", "misgendering", "no_pronoun") if label != row["label"])

        outcome = study_verify(source=io.BytesIO(crafted(bundle, {"annotations.jsonl": jsonl(rows)})))

        assert outcome["changed_files"] == [] and outcome["differ"]
        assert any(value is not None for value in figures(json.loads(read(bundle, "report.json"))).values())


def _flipped(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, 0]
    if isinstance(value, dict):
        return {**value, "flipped": 1}
    return 0
