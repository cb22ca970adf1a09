"""People's labels that would poison a pool (docs/domain.md, "Bring your own study"): a time no reader can hold, a
NUL character, a line nested thousands deep, a row short of cells. Each is refused at the import, by the command,
the API and the page alike, naming the file, the line and the field; nothing is written, and the pool's pages keep
answering. A connection lost mid-import ends in one line that says nothing was written."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation
from annotation.services import label_import
from tests.annotation.imported_study import build_pool

pytestmark = pytest.mark.django_db

HEADER = "item,annotator,label,created_at,seconds,extraneous,note\n"


@pytest.fixture
def study():
    return build_pool()


def _item(study) -> str:
    return next(iter(study.people))


def _file(tmp_path, text: str, name: str = "people.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path, pool) -> str:
    with pytest.raises(CommandError) as refused:
        call_command("import_labels", str(path), "--pool", pool.name)
    assert not Annotation.objects.exists()
    return str(refused.value)


class TestTimes:
    @pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00", "1899-12-31T12:00Z"])
    def test_a_time_no_reader_can_hold_is_refused_with_its_line_and_field(self, study, tmp_path, stamp):
        item = _item(study)
        path = _file(
            tmp_path, f"{HEADER}{item},ann-a,correct,2025-01-01T00:00:00Z,3,0,\n{item},ann-b,correct,{stamp},3,0,\n"
        )

        message = _refused(path, study.pool)

        assert (
            f"people.csv:3: item '{item}', annotator 'ann-b': created_at: must be between 1900-01-01 and 9998-12-31"
            in message
        )

    def test_the_edges_of_the_range_are_kept_and_every_page_of_the_pool_reads_them(self, study, tmp_path, researcher):
        item, other = list(study.people)[:2]
        path = _file(
            tmp_path,
            f"{HEADER}{item},ann-a,correct,1900-01-01T00:00:00Z,3,0,\n{item},ann-b,correct,9998-12-31T23:59:59Z,3,0,\n"
            f"{other},ann-a,correct,1900-01-01T14:00:00+14:00,3,0,\n",
        )
        call_command("import_labels", str(path), "--pool", study.pool.name, stdout=open("/dev/null", "w"))
        assert Annotation.objects.count() == 3
        client = Client()
        client.force_login(researcher)
        for url in (f"/pools/{study.pool.name}/quality/", f"/pools/{study.pool.name}/adjudicate/"):
            assert client.get(url).status_code == 200, url
        export = client.get(f"/api/pools/{study.pool.name}/annotations/?format=csv")
        assert b"9998-12-31T23:59:59+00:00" in b"".join(export.streaming_content)


class TestNul:
    def test_a_nul_in_a_note_is_refused_by_the_command(self, study, tmp_path):
        path = _file(tmp_path, f"{HEADER}{_item(study)},ann-a,correct,,3,0,a\x00b\n")

        assert "people.csv:2: note: holds a NUL character" in _refused(path, study.pool)

    def test_a_nul_in_a_json_line_is_refused(self, study, tmp_path):
        path = _file(
            tmp_path,
            f'{{"item": "{_item(study)}", "annotator": "ann-a", "label": "correct", "note": "\\u0000"}}\n',
            "p.jsonl",
        )

        assert "p.jsonl:1: note: holds a NUL character" in _refused(path, study.pool)

    def test_the_api_preview_and_the_import_both_refuse_it_with_400(self, study, researcher):
        client = APIClient()
        client.force_authenticate(researcher)
        body = f"{HEADER}{_item(study)},ann-a,correct,,3,0,a\x00b\n".encode()
        url = f"/api/pools/{study.pool.name}/imports/"

        preview = client.post(
            url, {"files": [SimpleUploadedFile("mine.csv", body)], "kind": "labels", "preview": "true"}
        )
        written = client.post(url, {"files": [SimpleUploadedFile("mine.csv", body)], "kind": "labels"})

        assert preview.status_code == 200 and preview.json()["ok"] is False
        assert preview.json()["errors"] == ["mine.csv:2: note: holds a NUL character"]
        assert written.status_code == 400 and written.json()["errors"] == ["mine.csv:2: note: holds a NUL character"]
        assert not Annotation.objects.exists()

    def test_the_page_refuses_it_with_400(self, study, researcher):
        client = Client()
        client.force_login(researcher)
        body = f"{HEADER}{_item(study)},ann-a,correct,,3,0,a\x00b\n".encode()

        page = client.post(
            f"/pools/{study.pool.name}/labels/", {"files": SimpleUploadedFile("mine.csv", body), "kind": "labels"}
        )

        assert page.status_code == 400 and b"mine.csv:2: note: holds a NUL character" in page.content
        assert not Annotation.objects.exists()

    def test_a_nul_in_a_qualification_reset_is_a_400(self, study, researcher):
        client = Client()
        client.force_login(researcher)

        response = client.post(f"/pools/{study.pool.name}/qualification/", {"reset": "ann\x00a"})

        assert response.status_code == 400
        assert b"reset: holds a NUL character" in response.content


class TestNesting:
    def test_a_line_of_five_thousand_nested_lists_is_refused_with_its_line(self, study, tmp_path):
        good = f'{{"item": "{_item(study)}", "annotator": "ann-a", "label": "correct"}}\n'
        path = _file(tmp_path, good + '{"item": ' + "[" * 5000 + "]" * 5000 + "}\n", "deep.jsonl")

        assert "deep.jsonl:2: not JSON (nested deeper than 64 levels)" in _refused(path, study.pool)

    def test_the_api_refuses_it_with_400(self, study, researcher):
        client = APIClient()
        client.force_authenticate(researcher)
        body = ('{"item": ' + "[" * 5000 + "]" * 5000 + "}\n").encode()

        response = client.post(
            f"/api/pools/{study.pool.name}/imports/",
            {"files": [SimpleUploadedFile("deep.jsonl", body)], "kind": "labels"},
        )

        assert response.status_code == 400
        assert "deep.jsonl:1: not JSON (nested deeper than 64 levels)" in response.json()["errors"]


class TestShortRows:
    def test_a_row_with_fewer_cells_than_the_header_is_refused(self, study, tmp_path):
        item = _item(study)
        path = _file(tmp_path, f"item,annotator,label,note\n{item},ann-a,correct,fine\n{item},ann-b,correct\n")

        assert "people.csv:3: 3 cells but the header has 4 columns" in _refused(path, study.pool)


@pytest.mark.django_db(transaction=True)  # the session is ended for real: no test transaction around it
@pytest.mark.skipif(settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"), reason="ends a PostgreSQL session")
def test_a_connection_lost_mid_import_says_in_one_line_that_nothing_was_written(tmp_path, monkeypatch):
    study = build_pool()
    path = _file(tmp_path, f"{HEADER}{_item(study)},ann-a,correct,,3,0,\n")
    original = label_import._write

    def dropped(plan, accounts):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return original(plan, accounts)

    monkeypatch.setattr(label_import, "_write", dropped)
    try:
        with pytest.raises(CommandError) as lost:
            call_command("import_labels", str(path), "--pool", study.pool.name)
    finally:
        connection.close()

    message = str(lost.value)
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "nothing was written" in message and f"import_labels {path} --pool {study.pool.name}" in message
    assert not Annotation.objects.exists()
