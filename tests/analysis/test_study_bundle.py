"""Study bundles (docs/domain.md, 'A study others can check'): the export holds what a reader needs and no person's
name; verifying a bundle on an empty database gives back every figure; a changed, truncated or incomplete bundle is
caught."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import zipfile

import pytest
from auditlog.models import LogEntry
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.roles import ANNOTATOR, RESEARCHER
from analysis.models import StudyPseudonym, WeightsDigest
from analysis.study.export import study_export
from analysis.study.figures import figures
from analysis.study.load import BundleError, study_bundle_read, study_import, study_verify
from analysis.study.tables import FORMAT_VERSION
from annotation.models import Annotation, Pool, PoolItem
from annotation.services.assignment import assignments_create
from annotation.services.guidelines import pool_guidelines_set
from judging.services.judges import judge_add
from tests.analysis.factories import study_build
from tests.conftest import _person
from tests.factories import AssignmentFactory, LanguageModelFactory
from tests.judging.conftest import finished_run

TABLE_FILES = ["generations.jsonl", "pool_items.jsonl", "annotations.jsonl", "adjudications.jsonl"]


@pytest.fixture(scope="module")
def study_built(module_db):
    """The hand-built study of tests/analysis/factories.py, with two guideline versions, an assignment-only
    annotator and a finished judge run over four of its items, built once per module (`module_db`): every test sees
    its rows, and its own writes roll back. Its people are the `annotator`, `second_annotator` and `researcher`."""
    with module_db():
        return study_pool_build(
            annotator=_person("ana", ANNOTATOR),
            second_annotator=_person("bo", ANNOTATOR),
            researcher=_person("rui_researcher", RESEARCHER),
        )


@pytest.fixture
def study(study_built, db):
    """The module's study pool, its record a copy for this test."""
    return copy.deepcopy(study_built)


@pytest.fixture
def study_bundle(study, once) -> bytes:
    """The bytes `export_bytes(study)` gives for the module's study, exported once per module (`once`: in a savepoint
    rolled back at once, so the export's pseudonyms and audit entry are not left behind for any test). For the tests
    that only read an unchanged study's bundle."""
    return once("study bundle", lambda: export_bytes(study))


def study_pool_build(*, annotator, second_annotator, researcher):
    """The `study` fixture's pool, built from these people."""
    pool = study_build(ana=annotator, bo=second_annotator)
    pool_guidelines_set(pool=pool, text="# v1\nLabel the pronouns.", user=researcher)
    pool_guidelines_set(pool=pool, text="# v2\nLabel the pronouns carefully.", user=researcher)
    Annotation.objects.filter(annotator=second_annotator).update(guideline_version=2)
    AssignmentFactory(pool=pool, item=pool.items.first(), annotator=_person("cy_idle", ANNOTATOR), position=0)
    judge = judge_add(name="study-judge", model=LanguageModelFactory(name="judge-lm"))[0]
    items = list(pool.items.order_by("pk"))[:4]
    scores = {"correct": -1.0, "misgendering": -2.0, "no_pronoun": -3.0}
    labels = {item: (label, 0.7, scores) for item, label in zip(items, ["correct", "misgendering"] * 2, strict=True)}
    finished_run(judge=judge, pool=pool, labels=labels)
    return pool


def export_bytes(pool) -> bytes:
    buffer = io.BytesIO()
    study_export(pool=pool, out=buffer)
    return buffer.getvalue()


def rewritten(bundle: bytes, *, drop: str = "", change: dict | None = None) -> bytes:
    """The bundle with one file left out, or with some files' contents replaced (the manifest left as it was)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bundle)) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            if name == drop:
                continue
            target.writestr(name, (change or {}).get(name, source.read(name)))
    return out.getvalue()


def version_1(bundle: bytes) -> bytes:
    """The bundle as Concord wrote it in format version 1: each generation run's columns (and its engine and
    filters, as options) in its job's row, each judge run's mode, k and temperature in its job's options and its
    seed as the job's, and no generation_runs.jsonl."""

    def rows(name: str) -> list[dict]:
        return [json.loads(line) for line in source.read(name).decode().splitlines() if line.strip()]

    with zipfile.ZipFile(io.BytesIO(bundle)) as source:
        files = {name: source.read(name) for name in source.namelist()}
        jobs = {row["id"]: row for row in rows("jobs.jsonl")}
        for run in rows("generation_runs.jsonl"):
            job = jobs[run.pop("job_id")]
            run.pop("id")
            extra = {name: run.pop(name) for name in ("engine", "distractors", "sample_seed")}
            job.update(run)
            job["options"] = {**job["options"], **{k: v for k, v in extra.items() if v not in (None, "")}}
        judge_runs = rows("judge_runs.jsonl")
        for run in judge_runs:
            job = jobs[run["job_id"]]
            job["seed"] = run.pop("seed")
            job["options"] = {"pool_id": run["pool_id"], "judge_id": run["judge_id"], "mode": run.pop("mode"),
                              "k": run.pop("k"), "temperature": run.pop("temperature")}  # fmt: skip
    files["jobs.jsonl"] = "".join(json.dumps(row) + "\n" for row in jobs.values()).encode()
    files["judge_runs.jsonl"] = "".join(json.dumps(row) + "\n" for row in judge_runs).encode()
    del files["generation_runs.jsonl"]
    manifest = json.loads(files["manifest.json"])
    manifest["format_version"] = 1
    del manifest["files"]["generation_runs.jsonl"]
    for name in ("jobs.jsonl", "judge_runs.jsonl"):
        manifest["files"][name]["sha256"] = hashlib.sha256(files[name]).hexdigest()
    files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name, data in files.items():
            target.writestr(name, data)
    return out.getvalue()


def clear_study_data():
    """An empty database as far as a study goes: what the bundle brings back is what the check reads."""
    Pool.objects.all().delete()


@pytest.mark.django_db
class TestExport:
    def test_the_bundle_holds_every_file_and_a_manifest_naming_their_digests(self, study_bundle):
        bundle = study_bundle

        with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
            names = set(archive.namelist())
            manifest = json.loads(archive.read("manifest.json"))
            annotations = [json.loads(line) for line in archive.read("annotations.jsonl").splitlines()]
        assert {"manifest.json", "report.json", "machine_labels.jsonl", *TABLE_FILES} <= names
        assert manifest["format_version"] == FORMAT_VERSION
        assert set(manifest["files"]) == names - {"manifest.json"}
        assert [g["version"] for g in manifest["guidelines"]] == [1, 2]
        assert manifest["guidelines"][0]["text"].startswith("# v1")
        assert [j["name"] for j in manifest["judges"]] == ["study-judge"]
        assert {job["kind"] for job in manifest["jobs"]} == {"generation", "judge"}
        assert all("seed" in job for job in manifest["jobs"])
        assert manifest["concord"]["version"] and manifest["concord"]["commit"]
        assert {m["name"] for m in manifest["models"]} == {"m1", "judge-lm"}
        assert manifest["people"] == ["annotator-01", "annotator-02", "annotator-03"]
        assert {row["annotator"] for row in annotations} == {"annotator-01", "annotator-02"}
        assert {row["guideline_version"] for row in annotations} == {None, 2}
        assert all({"created_at", "updated_at", "seconds", "spans", "origin"} <= set(row) for row in annotations)
        # the kind of rater beside each label; the label's own origin (made here or imported) travels as data
        assert {row["rater"] for row in annotations} == {"human"}
        assert {row["origin"] for row in annotations} == {"concord"}

    def test_no_username_password_or_email_is_anywhere_in_the_bundle(self, study, annotator, second_annotator):
        annotator.email = "ana@example.org"
        annotator.save()
        bundle = export_bytes(study)

        with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
            text = "\n".join(archive.read(name).decode() for name in archive.namelist())
        for secret in ("ana", "bo", "cy_idle", "rui_researcher", "ana@example.org", annotator.password):
            assert f'"{secret}"' not in text, secret
        assert "password" not in text and "email" not in text

    def test_pseudonyms_are_stable_and_follow_the_usernames(self, study, annotator, second_annotator):
        export_bytes(study)
        export_bytes(study)
        keys = dict(StudyPseudonym.objects.filter(pool=study).values_list("user__username", "pseudonym"))
        assert keys == {"ana": "annotator-01", "bo": "annotator-02", "cy_idle": "annotator-03"}

    def test_the_command_writes_the_archive(self, study, tmp_path, capsys):
        out = tmp_path / "STUDY.zip"
        call_command("export_study", "--pool", study.name, "--out", str(out))
        printed = json.loads(capsys.readouterr().out)
        assert zipfile.is_zipfile(out) and printed["rows"]["annotations.jsonl"] == 10


@pytest.mark.django_db
class TestVerify:
    def test_export_then_verify_on_an_empty_database_gives_every_figure_back(self, study_bundle, tmp_path, capsys):
        path = tmp_path / "STUDY.zip"
        path.write_bytes(study_bundle)
        clear_study_data()

        call_command("verify_study", str(path))

        printed = json.loads(capsys.readouterr().out)
        bundled = json.loads(zipfile.ZipFile(path).read("report.json"))
        numbers = [value for value in figures(bundled).values() if value is not None]
        assert printed["differ"] == [] and printed["figures"] == printed["equal"] == len(numbers) > 100
        assert not Pool.objects.exists()  # verification keeps nothing

    def test_one_changed_label_fails_and_names_the_figures_that_moved(self, study_bundle, tmp_path):
        bundle = study_bundle
        with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
            rows = [json.loads(line) for line in archive.read("annotations.jsonl").splitlines()]
        # ana's label of item 4 (the single "no_pronoun" on an xe item): now "misgendering".
        changed = next(row for row in rows if row["label"] == "no_pronoun" and row["annotator"] == "annotator-01")
        changed["label"] = "misgendering"
        body = "".join(json.dumps(row) + "\n" for row in rows).encode()
        path = tmp_path / "CHANGED.zip"
        path.write_bytes(rewritten(bundle, change={"annotations.jsonl": body}))
        clear_study_data()

        with pytest.raises(CommandError, match="differ") as failure:
            call_command("verify_study", str(path))

        outcome = study_verify(source=path)
        moved = [row["figure"] for row in outcome["differ"]]
        assert "human_vs_heuristic[m1/misgendered/pre/xe].agreement" in moved
        assert "label_distribution[m1/misgendered/pre/xe].no_pronoun" in moved
        assert "human_vs_heuristic[m1/misgendered/pre/xe].agreement" in str(failure.value)
        assert outcome["changed_files"] == ["annotations.jsonl"]
        # the he cell's figures did not move
        assert not any("/he]" in name for name in moved if name.startswith("label_distribution"))

    @pytest.mark.parametrize("missing", ["annotations.jsonl", "report.json", "manifest.json"])
    def test_a_bundle_with_a_file_missing_is_rejected_and_nothing_is_written(self, study_bundle, tmp_path, missing):
        path = tmp_path / "PART.zip"
        path.write_bytes(rewritten(study_bundle, drop=missing))
        clear_study_data()

        with pytest.raises(CommandError, match=f"{missing} (is )?missing"):
            call_command("import_study", str(path), "--pool", "again")
        assert not Pool.objects.exists() and not PoolItem.objects.exists()

    def test_a_truncated_bundle_is_rejected(self, study_bundle, tmp_path):
        bundle = study_bundle
        path = tmp_path / "CUT.zip"
        path.write_bytes(bundle[: len(bundle) // 2])

        with pytest.raises(CommandError, match="truncated"):
            call_command("verify_study", str(path))

    def test_a_damaged_member_is_rejected(self, study_bundle, tmp_path):
        bundle = bytearray(study_bundle)
        with zipfile.ZipFile(io.BytesIO(bytes(bundle))) as archive:
            info = archive.getinfo("annotations.jsonl")
        bundle[info.header_offset + 80] ^= 0xFF  # inside the compressed data: the CRC no longer matches
        path = tmp_path / "BAD.zip"
        path.write_bytes(bytes(bundle))

        with pytest.raises(BundleError):
            study_bundle_read(path)

    def test_a_newer_format_and_a_malformed_manifest_are_rejected(self, study_bundle):
        bundle = study_bundle
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(bundle)).read("manifest.json"))
        newer = rewritten(bundle, change={"manifest.json": json.dumps({**manifest, "format_version": 99})})

        with pytest.raises(BundleError, match="newer"):
            study_bundle_read(io.BytesIO(newer))
        with pytest.raises(BundleError, match="malformed"):
            study_bundle_read(io.BytesIO(rewritten(bundle, change={"manifest.json": "{not json"})))
        with pytest.raises(BundleError, match="not a readable zip"):
            study_bundle_read(io.BytesIO(b"plain text"))


@pytest.mark.django_db
class TestImport:
    def test_a_second_lab_imports_the_study_under_a_new_name_and_keeps_it(self, study, study_bundle, tmp_path, capsys):
        path = tmp_path / "STUDY.zip"
        path.write_bytes(study_bundle)

        call_command("import_study", str(path), "--pool", "continued")

        printed = json.loads(capsys.readouterr().out)
        pool = Pool.objects.get(name="continued")
        assert printed["pool"] == "continued" and printed["rows"]["annotations"] == 10
        assert pool.items.count() == study.items.count() and pool.guidelines.count() == 2
        assert Annotation.objects.filter(item__pool=pool).count() == 10
        assert set(pool.judge_runs.values_list("judge__name", flat=True)) == {"study-judge"}
        people = set(StudyPseudonym.objects.filter(pool=pool).values_list("pseudonym", flat=True))
        assert people == {"annotator-01", "annotator-02", "annotator-03"}
        # the second lab goes on: a new annotator gets the items nobody annotated yet
        newcomer = _person("lab2_annotator", ANNOTATOR)
        assert assignments_create(pool=pool, usernames=[newcomer.username]).created > 0

    def test_an_import_over_an_existing_pool_name_is_refused(self, study, study_bundle):
        bundle = study_bundle_read(io.BytesIO(study_bundle))
        with pytest.raises(BundleError, match="already exists"):
            study_import(bundle=bundle, pool_name=study.name)

    def test_a_version_1_bundle_keeps_its_jobs_and_judge_runs_parameters(self, study):
        """Version 1 kept a generation job's parameters in its jobs.jsonl row and a judge run's in its job's options
        and seed: an import today puts them in the kinds' own tables, with the same values."""
        from generation.models import GenerationRun
        from judging.models import JudgeRun

        def parameters(runs):
            return sorted((run.dataset.name.split("-old")[0], run.pronouns, run.settings, run.samples, run.seed,
                           run.prob_score) for run in runs.select_related("dataset"))  # fmt: skip

        original = parameters(GenerationRun.objects.filter(job__pools=study))
        assert original
        JudgeRun.objects.filter(pool=study).update(mode="sampling", k=3, temperature=0.5, seed=9)
        imported = study_import(bundle=study_bundle_read(io.BytesIO(version_1(export_bytes(study)))), pool_name="old")

        assert parameters(GenerationRun.objects.filter(job__pools=imported.pool)) == original
        [run] = JudgeRun.objects.filter(pool=imported.pool)
        assert (run.mode, run.k, run.temperature, run.seed, run.job.options) == ("sampling", 3, 0.5, 9, {})

    def test_a_changed_bundle_is_not_imported(self, study_bundle):
        bundle = study_bundle
        changed = rewritten(bundle, change={"annotations.jsonl": b""})
        with pytest.raises(BundleError, match="annotations.jsonl: differs"):
            study_import(bundle=study_bundle_read(io.BytesIO(changed)), pool_name="x")


@pytest.mark.django_db
class TestDownloadAndProvenance:
    def test_researchers_download_the_bundle_from_the_report_page(self, client, researcher, annotator, study):
        client.force_login(researcher)
        assert "study.zip" in client.get(f"/reports/{study.name}/").content.decode()

        response = client.get(f"/reports/{study.name}/study.zip")

        assert response.status_code == 200 and response["Content-Type"] == "application/zip"
        assert "manifest.json" in zipfile.ZipFile(io.BytesIO(response.content)).namelist()
        assert LogEntry.objects.get(additional_data__event="study.export").actor == researcher
        client.force_login(annotator)
        assert client.get(f"/reports/{study.name}/study.zip").status_code == 403

    def test_weights_are_hashed_once_per_file(self, tmp_path, monkeypatch):
        weights = tmp_path / "model.safetensors"
        weights.write_bytes(b"weights " * 1000)
        model = LanguageModelFactory(name="local-lm", source_kind="path", source=str(tmp_path))
        from analysis.study import provenance

        first = provenance.model_provenance(model)
        monkeypatch.setattr(provenance, "file_sha256", lambda path: pytest.fail("hashed twice"))
        second = provenance.model_provenance(model)

        assert (
            first["weights"]
            == second["weights"]
            == [{"file": "model.safetensors", "sha256": hashlib.sha256(b"weights " * 1000).hexdigest()}]
        )
        assert WeightsDigest.objects.count() == 1
