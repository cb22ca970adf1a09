"""A templates import's problems, as the command and the datasets page tell them: each file under the name its user
gave it (not a server's temporary copy), a missing names file once in the words of the page or the command, and a
cell that cannot be stored (a NUL character, more than 131,072 characters) as `FILE:LINE: field` with nothing
written (docs/domain.md, 'Your own templates')."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError

from generation.models import Dataset, Instance, PronounForm, Template
from tests.generation.test_templates_kind import CODEBOOK, NAMES, TEMPLATES, run_import, write_files

URL = "/generation/datasets/"
LIMIT = 131_072  # Python's csv field limit, which the import holds both formats to


def nothing_written() -> bool:
    return not (
        Dataset.objects.exists()
        or Template.objects.exists()
        or Instance.objects.exists()
        or PronounForm.objects.exists()
    )


def csv_bytes(rows) -> bytes:
    path_rows = [["id", "template", "group"], *rows]
    text = "".join(",".join('"' + str(value).replace('"', '""') + '"' for value in row) + "\r\n" for row in path_rows)
    return text.encode()


def upload(templates: bytes, *, templates_name: str = "my study templates.csv", names: bool = True) -> dict:
    data = {
        "name": "uploaded",
        "codebook": SimpleUploadedFile("families-v2.csv", CODEBOOK.encode()),
        "templates": SimpleUploadedFile(templates_name, templates),
        "names_per_template": 2,
        "seed": 5,
    }
    if names:
        data["names"] = SimpleUploadedFile("people.txt", ("\n".join(NAMES) + "\n").encode())
    return data


# (a row's change, its field): the second template row is line 3 of the file.
BAD_CELLS = [
    pytest.param(("b", "{target:nom} left\x00 early.", ""), "template", "NUL character", id="nul-in-template"),
    pytest.param(("b\x00", "{target:nom} left.", ""), "id", "NUL character", id="nul-in-id"),
    pytest.param(("b", "{target:nom} left.", "gr\x00oup"), "group", "NUL character", id="nul-in-group"),
    pytest.param(
        ("b", "{target:nom} left " + "x" * LIMIT + ".", ""), "template", "longer than 131,072", id="long-template"
    ),
    pytest.param(("b", "{target:nom} left.", "g" * (LIMIT + 1)), "group", "longer than 131,072", id="long-group"),
]


@pytest.mark.django_db
class TestTheCommand:
    @pytest.mark.parametrize(("row", "field", "problem"), BAD_CELLS)
    def test_a_cell_that_cannot_be_stored_is_a_file_line_field_error(self, tmp_path, row, field, problem):
        paths = write_files(tmp_path, templates=[TEMPLATES[2], row])

        with pytest.raises(CommandError) as caught:
            run_import(paths)

        message = str(caught.value)
        assert "nothing written" in message
        assert f"{paths['templates']}:3: field {field}: " in message and problem in message
        assert nothing_written()

    @pytest.mark.parametrize(
        ("value", "field", "problem"),
        [
            pytest.param({"template": "{target:nom} left\x00."}, "template", "NUL character", id="nul"),
            pytest.param({"id": "b" * (LIMIT + 1)}, "id", "longer than 131,072", id="long-id"),
        ],
    )
    def test_json_lines_are_held_to_the_same_rules(self, tmp_path, value, field, problem):
        paths = write_files(tmp_path)
        jsonl = tmp_path / "templates.jsonl"
        rows = [{"id": "a", "template": "{target:acc} stayed."}, {"id": "b", "template": "{target:nom} left."} | value]
        jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

        with pytest.raises(CommandError) as caught:
            run_import({**paths, "templates": jsonl})

        assert f"{jsonl}:2: field {field}: " in str(caught.value) and problem in str(caught.value)
        assert nothing_written()

    def test_a_name_with_a_nul_character_is_refused_with_its_line(self, tmp_path):
        paths = write_files(tmp_path, names=["Robin", "Sa\x00sha"])

        with pytest.raises(CommandError) as caught:
            run_import(paths, "--names", str(paths["names"]))

        assert f"{paths['names']}:2: " in str(caught.value) and "NUL character" in str(caught.value)
        assert nothing_written()

    def test_name_without_a_names_file_is_told_once_with_the_flag(self, tmp_path):
        paths = write_files(tmp_path)  # a1 and a2 (lines 2 and 3) use {name}, each twice

        with pytest.raises(CommandError) as caught:
            run_import(paths)

        message = str(caught.value)
        assert message.count("{name}") == 1
        assert f"{paths['templates']}:2: field template: {{name}} needs a names file" in message
        assert "--names NAMES.txt" in message and "line 3" in message
        assert nothing_written()


@pytest.mark.django_db
class TestThePage:
    @pytest.fixture
    def admin_client(self, client, admin_user):
        client.force_login(admin_user)
        return client

    def test_errors_name_the_uploaded_file_not_a_temporary_copy(self, admin_client):
        response = admin_client.post(URL, upload(csv_bytes([("x", "Nobody is here.", "")])))

        page = response.content.decode()
        assert response.status_code == 400
        assert "my study templates.csv:2: field template: no target slot" in page
        assert "concord-templates-" not in page and "/tmp" not in page
        assert nothing_written()

    def test_a_codebook_error_names_the_uploaded_codebook(self, admin_client):
        data = upload(csv_bytes([TEMPLATES[2]]))
        data["codebook"] = SimpleUploadedFile("families-v2.csv", (CODEBOOK + "he,x,y,z,w,v\n").encode())

        page = admin_client.post(URL, data).content.decode()

        assert "families-v2.csv:6: field base: duplicate base" in page
        assert nothing_written()

    def test_name_without_a_names_file_is_told_once_in_the_pages_words(self, admin_client):
        response = admin_client.post(URL, upload(csv_bytes(TEMPLATES), names=False))

        page = response.content.decode()
        assert response.status_code == 400
        assert page.count("needs a names file") == 1
        assert "my study templates.csv:2: field template: {name} needs a names file" in page
        assert "--names" not in page and "Names" in page
        assert nothing_written()

    @pytest.mark.parametrize(("row", "field", "problem"), BAD_CELLS)
    def test_a_cell_that_cannot_be_stored_is_a_form_error(self, admin_client, row, field, problem):
        response = admin_client.post(URL, upload(csv_bytes([TEMPLATES[2], row])))

        page = response.content.decode()
        assert response.status_code == 400
        assert f"my study templates.csv:3: field {field}: " in page and problem in page
        assert nothing_written()

    def test_a_good_upload_keeps_the_uploaded_name_as_its_source(self, admin_client):
        assert admin_client.post(URL, upload(csv_bytes(TEMPLATES))).status_code == 302

        assert Dataset.objects.get(name="uploaded").source == "my study templates.csv"


def test_the_csv_helper_writes_what_the_csv_module_reads(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_bytes(csv_bytes([("a", 'say "hi", {target:nom}', "g")]))
    with path.open(newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle))[1] == ["a", 'say "hi", {target:nom}', "g"]
