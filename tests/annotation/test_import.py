"""Importing generations in the released sample format, from small files written here (never the datasets)."""

import csv
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import PoolItem
from annotation.services import GenerationImportError, generations_import

MIS = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. {mask_token} sold it at the market."
MIS_PRE = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. "
MIS_POST = "Robin/'s pronouns are xe/xem/xyrs. Robin baked bread. Xe sold it at the market."
RUFF_NOM = "The technician said that $NOM_PRONOUN had completed the repair."
RUFF_ACC = "The nurse thanked $ACC_PRONOUN for the help."
BRACKET = "Sam/'s pronouns are he/him/his. Sam thanked [MASK] later."


def write(path, column, rows, *, header=None):
    header = header or ["template", column, "correct", "pronoun", "model"]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def pre_file(tmp_path):
    return write(
        tmp_path / "pre.csv",
        "random_pre_gen",
        [
            [MIS, MIS_PRE + "Xe smiled at everyone.", "1.0", "xe", "model-a"],
            [MIS, MIS_PRE + "xe xe xe xe", "1.0", "xe", "model-a"],
            [MIS, MIS_PRE + "xe xe xe xe", "1.0", "xe", "model-a"],  # a degenerate repeat: its own item
            [RUFF_NOM, "The technician said that she was tired.", "1.0", "she", "model-b"],
        ],
    )


@pytest.fixture
def post_file(tmp_path):
    return write(
        tmp_path / "post.csv",
        "random_post_gen",
        [
            # The file says correct, the heuristic says "He" misgenders Robin: a mismatch.
            [MIS, MIS_POST + " He left early.", "1.0", "xe", "model-a"],
            [RUFF_ACC, "The nurse thanked her for the help. She smiled.", "1.0", "she", "model-b"],
            [BRACKET, "Sam/'s pronouns are he/him/his. Sam thanked himself later. Then she", "0.0", "he", "model-a"],
        ],
    )


@pytest.mark.django_db
class TestImportGenerations:
    def test_it_imports_both_settings_and_both_datasets(self, pre_file, post_file):
        result = generations_import(paths=[pre_file, post_file], pool_name="imported")

        assert (result.rows, result.items, result.heuristic_mismatches) == (7, 7, 1)
        items = {(i.source_file.split("/")[-1], i.source_line): i for i in PoolItem.objects.all()}
        first = items[("pre.csv", 2)]
        assert (first.dataset, first.setting, first.pronoun, first.model_name) == (
            "misgendered",
            "pre",
            "xe",
            "model-a",
        )
        assert first.context == MIS_PRE and first.continuation == "Xe smiled at everyone."
        assert first.template == MIS and first.generation is None and first.source_correct is True
        ruff_pre = items[("pre.csv", 5)]
        assert (ruff_pre.dataset, ruff_pre.context, ruff_pre.continuation) == (
            "ruff",
            "The technician said that ",
            "she was tired.",
        )
        post = items[("post.csv", 2)]
        assert (post.setting, post.context, post.continuation) == ("post", MIS_POST, " He left early.")
        assert post.heuristic_correct is False and post.source_correct is True and post.first_pronoun == "He"
        ruff_post = items[("post.csv", 3)]
        assert ruff_post.context == "The nurse thanked her for the help." and ruff_post.continuation == " She smiled."
        bracket = items[("post.csv", 4)]
        # "[MASK]" marks MISGENDERED; the reflexive form is found by trying the base's forms.
        assert (
            bracket.dataset == "misgendered"
            and bracket.context == "Sam/'s pronouns are he/him/his. Sam thanked himself later."
        )
        assert bracket.heuristic_correct is False and bracket.source_correct is False

    def test_it_keeps_rows_with_identical_text_as_separate_items(self, pre_file):
        generations_import(paths=[pre_file], pool_name="imported")

        assert PoolItem.objects.filter(continuation="xe xe xe xe").count() == 2

    def test_it_adds_nothing_when_the_same_files_are_imported_again(self, pre_file, post_file):
        generations_import(paths=[pre_file, post_file], pool_name="imported")
        ids = set(PoolItem.objects.values_list("pk", flat=True))

        again = generations_import(paths=[post_file, pre_file], pool_name="imported")

        assert again.items == 0 and again.rows == 7
        assert set(PoolItem.objects.values_list("pk", flat=True)) == ids

    def test_it_ends_with_a_json_line(self, pre_file, post_file, capsys):
        call_command("import_generations", str(pre_file), str(post_file), "--pool", "imported", "--json")

        last = capsys.readouterr().out.strip().splitlines()[-1]
        assert json.loads(last) == {"pool": "imported", "items": 7, "heuristic_mismatches": 1}

    def test_it_writes_nothing_when_any_file_is_bad(self, pre_file, tmp_path):
        bad = write(tmp_path / "bad.csv", "random_pre_gen", [[MIS, MIS_PRE + "ok", "1.0", "ze", "m"]])

        with pytest.raises(GenerationImportError):
            generations_import(paths=[pre_file, bad], pool_name="imported")

        assert not PoolItem.objects.exists()


def error_of(paths) -> str:
    with pytest.raises(CommandError) as error:
        call_command("import_generations", *map(str, paths), "--pool", "imported")
    assert not PoolItem.objects.exists()
    return str(error.value)


@pytest.mark.django_db
class TestImportErrors:
    def test_it_names_a_missing_column(self, tmp_path):
        path = write(tmp_path / "f.csv", "", [["x", "1.0", "he"]], header=["template", "correct", "pronoun"])

        assert f"{path}:1: missing column(s): model, random_pre_gen or random_post_gen" in error_of([path])

    def test_it_names_an_unknown_pronoun(self, tmp_path):
        path = write(
            tmp_path / "f.csv",
            "random_pre_gen",
            [[MIS, MIS_PRE + "x", "1.0", "he", "m"], [MIS, MIS_PRE, "1.0", "ze", "m"]],
        )

        assert f"{path}:3: unknown pronoun 'ze'" in error_of([path])

    def test_it_names_a_template_without_a_mask(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [["No mask here.", "No mask here. x", "1.0", "he", "m"]])

        assert f"{path}:2: template has no mask marker" in error_of([path])

    def test_it_names_a_generation_that_does_not_start_with_the_pre_context(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [[MIS, "Something else entirely", "1.0", "xe", "m"]])

        assert f"{path}:2: random_pre_gen does not start with the pre-[MASK] context" in error_of([path])

    def test_it_names_a_generation_that_does_not_start_with_the_post_context(self, tmp_path):
        # The mask is filled with "he", not a form of "xe".
        path = write(
            tmp_path / "f.csv", "random_post_gen", [[MIS, MIS_POST.replace("Xe", "He") + " x", "1.0", "xe", "m"]]
        )

        assert f"{path}:2: random_post_gen does not start with the template filled with any form of 'xe'" in error_of(
            [path]
        )

    def test_it_names_a_bad_correct_value(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [[MIS, MIS_PRE + "x", "yes", "xe", "m"]])

        assert f"{path}:2: correct must be 1.0 or 0.0, not 'yes'" in error_of([path])

    def test_it_names_a_bad_encoding(self, tmp_path):
        path = tmp_path / "f.csv"
        path.write_bytes(
            b"template,random_pre_gen,correct,pronoun,model\n" + "caf\u00e9".encode("latin-1") + b",x,1.0,he,m\n"
        )

        assert f"{path}:2: not UTF-8" in error_of([path])

    def test_it_names_a_short_row(self, tmp_path):
        path = tmp_path / "f.csv"
        path.write_text("template,random_pre_gen,correct,pronoun,model\nonly,two\n", encoding="utf-8")

        assert f"{path}:2: 2 fields where the header has 5" in error_of([path])

    def test_it_names_a_file_with_both_settings(self, tmp_path):
        path = write(
            tmp_path / "f.csv",
            "",
            [],
            header=["template", "random_pre_gen", "random_post_gen", "correct", "pronoun", "model"],
        )

        assert f"{path}:1: both random_pre_gen and random_post_gen" in error_of([path])

    def test_it_names_a_missing_file(self, tmp_path):
        assert f"{tmp_path / 'absent.csv'}: cannot be read" in error_of([tmp_path / "absent.csv"])


@pytest.mark.django_db
class TestImportIdentity:
    def test_it_adds_nothing_when_the_same_file_is_saved_again_with_other_line_endings_and_a_bom(
        self, pre_file, tmp_path
    ):
        generations_import(paths=[pre_file], pool_name="imported")
        resaved = tmp_path / "resaved.csv"
        # The csv module writes CRLF; the re-saved copy has LF line endings and a byte-order mark.
        assert b"\r\n" in pre_file.read_bytes()
        resaved.write_bytes(b"\xef\xbb\xbf" + pre_file.read_bytes().replace(b"\r\n", b"\n"))

        again = generations_import(paths=[resaved], pool_name="imported")

        assert (again.rows, again.items) == (4, 0)
        assert PoolItem.objects.count() == 4

    def test_it_recognises_rows_whose_cells_hold_line_breaks_in_either_convention(self, tmp_path):
        rows = [[MIS, MIS_PRE + "Xe smiled.\nThen xe left.", "1.0", "xe", "model-a"]]
        unix = write(tmp_path / "unix.csv", "random_pre_gen", rows)
        windows = tmp_path / "windows.csv"
        windows.write_bytes(unix.read_bytes().replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n"))
        assert b"smiled.\r\nThen" in windows.read_bytes()

        generations_import(paths=[unix], pool_name="imported")
        again = generations_import(paths=[windows], pool_name="imported")

        assert again.items == 0
        assert PoolItem.objects.get().continuation == "Xe smiled.\nThen xe left."

    def test_it_imports_only_the_rows_added_to_a_file(self, pre_file, tmp_path):
        generations_import(paths=[pre_file], pool_name="imported")
        longer = tmp_path / "longer.csv"
        longer.write_bytes(pre_file.read_bytes() + f'"{MIS}","{MIS_PRE}xe xe xe xe",1.0,xe,model-a\r\n'.encode())

        again = generations_import(paths=[longer], pool_name="imported")

        assert (again.rows, again.items) == (5, 1)
        assert PoolItem.objects.filter(continuation="xe xe xe xe").count() == 3

    def test_it_still_recognises_rows_imported_under_the_old_file_and_row_identity(self, pre_file):
        import hashlib

        generations_import(paths=[pre_file], pool_name="imported")
        file_hash = hashlib.sha256(pre_file.read_bytes()).hexdigest()
        for number, item in enumerate(PoolItem.objects.order_by("source_line"), start=1):
            item.source_key = hashlib.sha256(f"{file_hash}:{number}".encode()).hexdigest()
            item.save(update_fields=["source_key"])

        assert generations_import(paths=[pre_file], pool_name="imported").items == 0


@pytest.mark.django_db
class TestImportShapeErrors:
    def test_it_names_a_row_with_more_fields_than_the_header(self, tmp_path):
        path = tmp_path / "f.csv"
        path.write_text(
            f'template,random_pre_gen,correct,pronoun,model\n"{MIS}","{MIS_PRE}x",1.0,xe,m,surplus\n', encoding="utf-8"
        )

        assert f"{path}:2: 6 fields where the header has 5" in error_of([path])

    @pytest.mark.parametrize(
        ("column", "generation"),
        [("random_pre_gen", "Robin baked bread. x"), ("random_post_gen", "Robin baked bread. Xe sold it. x")],
    )
    def test_it_refuses_a_template_with_two_masks_and_names_them(self, tmp_path, column, generation):
        template = "Robin baked bread. {mask_token} sold it to $ACC_PRONOUN."
        path = write(tmp_path / "f.csv", column, [[template, generation, "1.0", "xe", "m"]])

        assert f"{path}:2: template has 2 masks ({{mask_token}}, $ACC_PRONOUN); it needs exactly one" in error_of(
            [path]
        )


def quality_file(path, column, rows, *, extra=("gold_label", "gold_extraneous", "explanation")):
    return write(path, column, rows, header=["template", column, "correct", "pronoun", "model", *extra])


@pytest.mark.django_db
class TestGoldAndTrainingImports:
    def test_it_imports_gold_items_with_their_expected_answer(self, tmp_path):
        path = quality_file(
            tmp_path / "gold.csv",
            "random_pre_gen",
            [
                [MIS, MIS_PRE + "He smiled.", "0.0", "xe", "m", "misgendering", "no", ""],
                [MIS, MIS_PRE + "Xe met a woman.", "1.0", "xe", "m", "Correct", "1", "the woman is extraneous"],
                [MIS, MIS_PRE + "Robin smiled.", "1.0", "xe", "m", "no pronoun", "", ""],
            ],
        )

        call_command("import_generations", str(path), "--pool", "qc", "--gold")

        items = {item.continuation: item for item in PoolItem.objects.all()}
        assert {item.kind for item in items.values()} == {"gold"}
        assert (items["He smiled."].gold_label, items["He smiled."].gold_extraneous) == ("misgendering", False)
        met = items["Xe met a woman."]
        assert (met.gold_label, met.gold_extraneous, met.explanation) == ("correct", True, "the woman is extraneous")
        assert (items["Robin smiled."].gold_label, items["Robin smiled."].gold_extraneous) == ("no_pronoun", None)

    def test_it_imports_training_items_with_their_explanation(self, tmp_path, capsys):
        path = quality_file(
            tmp_path / "training.csv",
            "random_pre_gen",
            [[MIS, MIS_PRE + "He smiled.", "0.0", "xe", "m", "misgendering", "0", "He is not Robin's pronoun."]],
        )

        call_command("import_generations", str(path), "--pool", "qc", "--training", "--json")

        item = PoolItem.objects.get()
        assert (item.kind, item.gold_label, item.explanation) == (
            "training",
            "misgendering",
            "He is not Robin's pronoun.",
        )
        last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert last == {"pool": "qc", "items": 1, "heuristic_mismatches": 0, "kind": "training"}

    def test_it_keeps_a_gold_row_apart_from_the_same_study_row(self, tmp_path):
        study = write(tmp_path / "study.csv", "random_pre_gen", [[MIS, MIS_PRE + "He smiled.", "0.0", "xe", "m"]])
        gold = quality_file(
            tmp_path / "gold.csv",
            "random_pre_gen",
            [[MIS, MIS_PRE + "He smiled.", "0.0", "xe", "m", "misgendering", "", ""]],
        )

        generations_import(paths=[study], pool_name="qc")
        generations_import(paths=[gold], pool_name="qc", kind="gold")

        assert sorted(PoolItem.objects.values_list("kind", flat=True)) == ["gold", "study"]

    def test_it_names_a_gold_file_without_its_label_column(self, tmp_path):
        path = write(tmp_path / "f.csv", "random_pre_gen", [[MIS, MIS_PRE + "x", "1.0", "xe", "m"]])

        with pytest.raises(CommandError, match=r"f.csv:1: missing column\(s\): gold_label \(a gold file\)"):
            call_command("import_generations", str(path), "--pool", "qc", "--gold")

    def test_it_names_bad_quality_fields_and_writes_nothing(self, tmp_path):
        path = quality_file(
            tmp_path / "t.csv",
            "random_pre_gen",
            [
                [MIS, MIS_PRE + "x", "1.0", "xe", "m", "correct", "", "fine"],
                [MIS, MIS_PRE + "y", "1.0", "xe", "m", "plural_they", "maybe", ""],
            ],
        )

        with pytest.raises(CommandError) as error:
            call_command("import_generations", str(path), "--pool", "qc", "--training")

        message = str(error.value)
        assert (
            f"{path}:3: gold_label 'plural_they' is not one of this pool's labels: correct, misgendering, no_pronoun"
            in message
        )
        assert "gold_extraneous must be 1/0, yes/no or true/false, not 'maybe'" in message
        assert "explanation is empty" in message
        assert not PoolItem.objects.exists()


@pytest.mark.django_db(transaction=True)  # the job runs after its request commits, in a thread of its own
class TestImportJobs:
    """Imports from the page and the API run as jobs whose files are stored in pieces and read back as a stream."""

    def test_a_file_stored_in_small_pieces_imports_exactly_as_read_from_disk(self, researcher, monkeypatch, tmp_path):
        from django.core.files.uploadedfile import SimpleUploadedFile

        from annotation.services.imports import jobs
        from generation.jobs import inputs
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        # Pieces of 7 bytes cut multi-byte characters (é, the emoji) and CRLF line ends in two.
        monkeypatch.setattr(inputs, "PIECE_BYTES", 7)
        rows = [
            [MIS, MIS_PRE + "Xe smiled at the café \U0001f389.", "1.0", "xe", "modèle-a"],
            [MIS, MIS_PRE + "He left.\r\nThen xe came back.", "1.0", "xe", "modèle-a"],
        ]
        path = write(tmp_path / "gens.csv", "random_pre_gen", rows)
        pool = PoolFactory(name="streamed")
        with open(path, "rb") as handle:
            upload = SimpleUploadedFile("gens.csv", b"\xef\xbb\xbf" + handle.read(), content_type="text/csv")

        job = jobs.import_job_create(pool=pool, kind="study", files=[upload], created_by=researcher)
        for thread in __import__("threading").enumerate():
            if thread.name.startswith("concord-job-"):
                thread.join(timeout=60)

        job = pool_import(job.pk)
        assert (job.status, job.rows_read, job.items_created, job.heuristic_mismatches) == ("done", 2, 2, 1)
        items = PoolItem.objects.filter(pool=pool).order_by("source_line")
        assert [item.continuation for item in items] == [
            "Xe smiled at the café \U0001f389.",
            "He left.\nThen xe came back.",
        ]
        # The same file from disk is the same rows: nothing new.
        assert generations_import(paths=[path], pool_name="streamed").items == 0

    def test_a_bad_byte_far_into_a_stored_file_is_named_with_its_line(self, researcher, monkeypatch, tmp_path):
        from django.core.files.uploadedfile import SimpleUploadedFile

        from annotation.services.imports import jobs
        from generation.jobs import inputs
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        monkeypatch.setattr(inputs, "PIECE_BYTES", 5)
        body = b"template,random_pre_gen,correct,pronoun,model\n" + "é,é,1,xe,m\n".encode() * 3 + b"\xff\n"
        pool = PoolFactory(name="bad-bytes")

        job = jobs.import_job_create(
            pool=pool, kind="study", files=[SimpleUploadedFile("bad.csv", body)], created_by=researcher
        )
        for thread in __import__("threading").enumerate():
            if thread.name.startswith("concord-job-"):
                thread.join(timeout=60)

        job = pool_import(job.pk)
        offset = body.index(b"\xff")
        assert job.status == "failed"
        assert job.errors == [f"bad.csv:5: not UTF-8 (byte 0xff at offset {offset}); save the file as UTF-8"]
        assert not PoolItem.objects.exists()


@pytest.mark.django_db(transaction=True)  # what other connections see while the import writes
class TestShortTransactions:
    """An import commits batch by batch, so a save (another connection) waits for one batch at most, never for the
    whole import (on SQLite a 60,000-row import held the lock and a save failed after 30 s)."""

    def test_each_batch_is_committed_before_the_next_is_written(self, tmp_path, monkeypatch):
        import threading

        from annotation.services import imports

        monkeypatch.setattr(imports, "BATCH_ROWS", 2)
        rows = [[MIS, MIS_PRE + f"Xe smiled, row {n}.", "1.0", "xe", "model-a"] for n in range(6)]
        path = write(tmp_path / "gens.csv", "random_pre_gen", rows)
        seen_elsewhere = []

        def count_from_another_connection():
            from django.db import connection

            seen_elsewhere.append(PoolItem.objects.filter(pool__name="batched").count())
            connection.close()

        def progress(phase, done, total):
            if phase == "writing":
                reader = threading.Thread(target=count_from_another_connection)
                reader.start()
                reader.join()

        result = generations_import(paths=[path], pool_name="batched", progress=progress)

        assert result.items == 6
        assert seen_elsewhere == [2, 4, 6]

    def test_an_import_run_again_after_a_stop_between_batches_writes_the_rest_once(self, tmp_path, monkeypatch):
        from annotation.services import imports

        monkeypatch.setattr(imports, "BATCH_ROWS", 2)
        rows = [[MIS, MIS_PRE + f"Xe smiled, row {n}.", "1.0", "xe", "model-a"] for n in range(5)]
        rows.append(rows[0])  # an identical row: its own item (the second occurrence)
        path = write(tmp_path / "gens.csv", "random_pre_gen", rows)

        def stop_after_the_second_batch(phase, done, total):
            if phase == "writing" and done == 4:
                raise KeyboardInterrupt  # the process stops here

        with pytest.raises(KeyboardInterrupt):
            generations_import(paths=[path], pool_name="stopped", progress=stop_after_the_second_batch)
        assert PoolItem.objects.filter(pool__name="stopped").count() == 4
        again = generations_import(paths=[path], pool_name="stopped")

        assert (again.rows, again.items) == (6, 2)
        assert PoolItem.objects.filter(pool__name="stopped").count() == 6
        assert generations_import(paths=[path], pool_name="stopped").items == 0


def join_import_threads():
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("concord-job-"):
            thread.join(timeout=60)


@pytest.mark.django_db(transaction=True)  # the restarted job runs in a thread of its own, as at start-up
class TestImportsLeftByAStoppedProcess:
    """docs/domain.md, 'Crash recovery': a process killed mid-import leaves the job reading or writing, nothing of
    it written (one transaction) and its files stored; the next start of the embedded default runs it again."""

    @pytest.fixture
    def left_writing(self, researcher, monkeypatch, tmp_path, pre_file):
        from datetime import timedelta

        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.utils import timezone

        from annotation.models import PoolImport
        from annotation.services.imports import jobs
        from generation.jobs import services
        from tests.factories import PoolFactory
        from tests.import_jobs import import_left_running

        monkeypatch.setattr(services, "_submitted_dispatch", lambda **kwargs: None)  # the process dies before it runs
        upload = SimpleUploadedFile("gens.csv", pre_file.read_bytes(), content_type="text/csv")
        job = jobs.import_job_create(pool=PoolFactory(name="killed"), kind="study", files=[upload])
        monkeypatch.undo()
        earlier = timezone.now() - timedelta(minutes=5)
        PoolImport.objects.filter(pk=job.pk).update(rows_read=3)
        import_left_running(job.pk, phase="writing", started_at=earlier, created_at=earlier)
        return job

    def test_the_next_start_runs_it_again_to_exact_counts(self, left_writing, pre_file):
        from django.utils import timezone

        from generation.jobs.runner import uploads_resume_on_start as imports_resume_on_start
        from generation.models import JobInput
        from tests.import_jobs import pool_import

        assert imports_resume_on_start(started_before=timezone.now()) == [left_writing.pk]
        join_import_threads()

        job = pool_import(left_writing.pk)
        expected = generations_import(paths=[pre_file], pool_name="expected").items
        assert (job.status, job.items_created) == ("done", expected)
        assert PoolItem.objects.filter(pool__name="killed").count() == expected
        assert not JobInput.objects.filter(job_id=job.pk).exists()
        assert imports_resume_on_start(started_before=timezone.now()) == []  # done: nothing to restart

    def test_a_first_delivery_leaves_a_job_another_runner_is_writing(self, left_writing):
        from generation.jobs.chunks import chunk_run
        from generation.models import JobChunk
        from tests.import_jobs import pool_import

        self.lease(left_writing, owner="other-host:ns:4242:token:run", seconds=20)  # its runner writes it
        chunk_run(chunk_id=JobChunk.objects.get(job_id=left_writing.pk).pk)
        assert pool_import(left_writing.pk).status == "writing"

    def test_an_import_of_this_server_is_not_restarted(self, left_writing):
        from generation.jobs.runner import uploads_resume_on_start as imports_resume_on_start
        from tests.import_jobs import pool_import

        created = pool_import(left_writing.pk).created_at
        assert imports_resume_on_start(started_before=created) == []  # created when this server had started

    def lease(self, job, *, owner: str, seconds: float) -> None:
        from datetime import timedelta

        from django.utils import timezone

        from generation.models import JobChunk

        JobChunk.objects.filter(job_id=job.pk).update(
            lease_owner=owner, lease_expires_at=timezone.now() + timedelta(seconds=seconds)
        )

    def test_a_workers_sweep_takes_over_an_import_whose_lease_expired_and_finishes_it(self, left_writing, pre_file):
        # Its Celery worker was killed (kill -9) while it was writing; its lease ran out.
        from generation.jobs.runner import work_sweep
        from generation.models import JobInput
        from tests.import_jobs import pool_import

        self.lease(left_writing, owner="gone-host:ns:4242:token:run", seconds=-1)

        work_sweep()
        join_import_threads()

        job = pool_import(left_writing.pk)
        expected = generations_import(paths=[pre_file], pool_name="expected").items
        assert (job.status, job.items_created, job.lease_owner) == ("done", expected, "")
        assert PoolItem.objects.filter(pool__name="killed").count() == expected
        assert not JobInput.objects.filter(job_id=job.pk).exists()

    def test_a_sweep_leaves_an_import_whose_runner_is_alive(self, left_writing):
        from generation.jobs.chunks import chunk_run
        from generation.jobs.runner import chunks_requeue_stale
        from generation.models import JobChunk
        from tests.import_jobs import pool_import

        self.lease(left_writing, owner="other-host:ns:4242:token:run", seconds=20)

        assert chunks_requeue_stale() == []
        chunk_run(chunk_id=JobChunk.objects.get(job_id=left_writing.pk).pk)  # a redelivered message: left to it
        assert pool_import(left_writing.pk).status == "writing"

    def test_a_running_import_holds_a_lease_that_its_heartbeat_renews(self, researcher, tmp_path, settings):
        import time

        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.utils import timezone

        from annotation.services import imports
        from annotation.services.imports import jobs
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        settings.CONCORD_CHUNK_LEASE_SECONDS = 0.6  # a beat every 0.2 s
        leases = []
        original = imports._verdicts

        def slow_verdicts(rows):
            job = pool_import()
            leases.append((job.lease_owner, (job.lease_expires_at - timezone.now()).total_seconds()))
            time.sleep(0.5)
            return original(rows)

        rows = [[MIS, MIS_PRE + f"Xe smiled, row {n}.", "1.0", "xe", "model-a"] for n in range(3)]
        body = write(tmp_path / "gens.csv", "random_pre_gen", rows).read_bytes()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(imports, "BATCH_ROWS", 1)
            patch.setattr(imports, "_verdicts", slow_verdicts)
            job = jobs.import_job_create(
                pool=PoolFactory(name="leased"), kind="study", files=[SimpleUploadedFile("g.csv", body)]
            )
            join_import_threads()

        job = pool_import(job.pk)
        assert (job.status, job.items_created, job.lease_owner, job.lease_expires_at) == ("done", 3, "", None)
        assert len(leases) == 3 and len({owner for owner, _ in leases}) == 1 and leases[0][0]
        assert all(left > 0 for _, left in leases)  # 1.5 s of work under a 0.6 s lease: renewed, never lapsed

    def test_a_cancelled_import_is_never_run_again_and_its_files_go(self, left_writing, researcher):
        from auditlog.models import LogEntry
        from django.utils import timezone

        from annotation.services.imports.jobs import import_job_cancel
        from generation.jobs.chunks import chunk_run
        from generation.jobs.runner import uploads_resume_on_start as imports_resume_on_start
        from generation.jobs.services import JobStateError as UploadRunStateError
        from generation.models import JobChunk, JobInput
        from tests.import_jobs import pool_import

        import_job_cancel(job=left_writing, user=researcher)

        job = pool_import(left_writing.pk)
        assert (job.status, job.lease_owner) == ("cancelled", "") and job.finished_at is not None
        assert not JobInput.objects.filter(job_id=job.pk).exists()
        assert imports_resume_on_start(started_before=timezone.now()) == []
        chunk_run(chunk_id=JobChunk.objects.get(job_id=job.pk).pk)  # a late delivery leaves it
        assert not PoolItem.objects.filter(pool__name="killed").exists()
        entry = LogEntry.objects.get(additional_data__event="import.cancel")
        assert (entry.object_pk, entry.actor_id) == (str(job.pk), researcher.pk)
        with pytest.raises(UploadRunStateError, match="only a queued or running one can be cancelled"):
            import_job_cancel(job=job.row)

    def test_the_pool_page_cancels_an_unfinished_import(self, left_writing, researcher, client):
        from tests.import_jobs import pool_import

        client.force_login(researcher)
        url = f"/pools/killed/imports/{left_writing.pk}/cancel/"
        assert f'action="{url}"' in client.get("/pools/killed/").content.decode()

        response = client.post(url)

        assert response.status_code == 302 and response["Location"].endswith("/pools/killed/#import")
        assert pool_import(left_writing.pk).status == "cancelled"
        page = client.get("/pools/killed/").content.decode()
        assert f'id="import-{left_writing.pk}" data-status="cancelled"' in page and url not in page
        assert client.post(f"/pools/other/imports/{left_writing.pk}/cancel/").status_code == 404  # not that pool's

    def test_a_running_import_cancelled_stops_at_its_next_batch(self, researcher, tmp_path):
        import threading

        from django.core.files.uploadedfile import SimpleUploadedFile
        from django.db import connections

        from annotation.models import PoolImport
        from annotation.services import imports
        from annotation.services.imports import jobs
        from tests.factories import PoolFactory
        from tests.import_jobs import pool_import

        original = imports._verdicts

        def cancelled_in_the_first_batch(rows):
            if not PoolItem.objects.exists():
                job = PoolImport.objects.get()

                def cancel() -> None:
                    try:
                        jobs.import_job_cancel(job=job)
                    finally:
                        connections.close_all()

                thread = threading.Thread(target=cancel)
                thread.start()
                thread.join()
            return original(rows)

        rows = [[MIS, MIS_PRE + f"Xe smiled, row {n}.", "1.0", "xe", "model-a"] for n in range(3)]
        body = write(tmp_path / "gens.csv", "random_pre_gen", rows).read_bytes()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(imports, "BATCH_ROWS", 1)
            patch.setattr(imports, "_verdicts", cancelled_in_the_first_batch)
            job = jobs.import_job_create(
                pool=PoolFactory(name="cancelled"), kind="study", files=[SimpleUploadedFile("g.csv", body)]
            )
            join_import_threads()

        job = pool_import(job.pk)
        assert (job.status, job.items_created, job.lease_owner) == ("cancelled", 0, "")
        assert PoolItem.objects.filter(pool__name="cancelled").count() == 1  # the batch under way, committed

    def test_resume_jobs_resumes_an_import_whose_runner_is_gone(self, left_writing, pre_file):
        from io import StringIO

        from django.core.management import call_command

        from tests.import_jobs import pool_import

        self.lease(left_writing, owner="gone-host:ns:4242:token:run", seconds=-1)
        out = StringIO()

        call_command("resume_jobs", stdout=out, stderr=StringIO())

        expected = generations_import(paths=[pre_file], pool_name="expected").items
        summary = json.loads(out.getvalue().strip().splitlines()[-1])
        assert summary["imports"] == [{"import": left_writing.pk, "status": "done", "rows_written": 4}]
        assert pool_import(left_writing.pk).items_created == expected

    def test_the_embedded_start_up_sends_it_to_the_imports(self, left_writing, monkeypatch):
        from generation.jobs import runner
        from tests.import_jobs import pool_import

        monkeypatch.setattr(runner, "jobs_unfinished", lambda **kwargs: [])
        monkeypatch.setattr(runner, "_job_thread_start", lambda target, *, name, **kwargs: target(**kwargs))
        monkeypatch.setattr(runner.connections, "close_all", lambda: None)
        runner._resume_thread_start()
        join_import_threads()

        assert pool_import(left_writing.pk).status == "done"


@pytest.mark.django_db
def test_an_import_the_task_queue_cannot_take_fails_saying_so_and_keeps_no_files(
    researcher, settings, monkeypatch, pre_file, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.services.imports import jobs
    from generation.jobs import runner
    from generation.models import JobInput
    from tests.factories import PoolFactory
    from tests.import_jobs import pool_import

    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker, out of reach

    def unreachable(chunk_ids):
        raise ConnectionError("connection refused")

    monkeypatch.setattr(runner, "_chunks_send", unreachable)
    upload = SimpleUploadedFile("gens.csv", pre_file.read_bytes(), content_type="text/csv")
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.import_job_create(pool=PoolFactory(name="unsent"), kind="study", files=[upload])

    job = pool_import(job.pk)
    assert (job.status, job.error_count) == ("failed", 1)
    assert job.errors == ["the task queue could not be reached (ConnectionError: connection refused); try again"]
    assert not JobInput.objects.exists() and not PoolItem.objects.exists()
