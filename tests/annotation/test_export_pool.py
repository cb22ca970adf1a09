"""A pool's items as a file (docs/domain.md, "Bring your own study"): `export_pool` and the pool page's download write
one row per item with its cell, texts, the heuristic (1, 0 or empty) and its kind, safe in a spreadsheet, for
researchers and admins only; the file imports again as free-text generations."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import GOLD, Pool, PoolItem
from annotation.services import generations_import
from tests.conftest import PASSWORD

HEADER = ["item", "model", "dataset", "setting", "pronoun", "sample", "context", "generation", "heuristic", "kind"]


@pytest.fixture
def pool(db, tmp_path) -> Pool:
    path = tmp_path / "gens.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "model", "dataset", "context", "generation", "pronoun", "setting", "sample"])
        writer.writerow(["a", "m1", "notes", "Write about Kim (xe).", "Kim said xe would.", "xe", "", ""])
        writer.writerow(["b", "m1", "notes", "Write about Kim (xe).", "Kim said she would.", "xe", "", "3"])
        writer.writerow(["c", "m2", "notes", '=HYPERLINK("x")', "-1 + 2 is what Kim wrote.", "", "zero-shot", ""])
    generations_import(paths=[path], pool_name="byos")
    pool = Pool.objects.get(name="byos")
    PoolItem.objects.create(
        pool=pool, model_name="m1", dataset="notes", setting="free", pronoun="he", context="C",
        continuation="He left.", heuristic_correct=True, kind=GOLD, gold_label="correct",
    )  # fmt: skip
    return pool


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.django_db
class TestExportPool:
    def test_it_writes_one_row_per_item_with_the_heuristic_as_1_0_or_empty(self, pool, tmp_path):
        out = tmp_path / "items.csv"

        call_command("export_pool", "--pool", "byos", "--out", str(out), stdout=io.StringIO())

        rows = rows_of(out.read_text(encoding="utf-8"))
        gold = PoolItem.objects.get(kind=GOLD)
        assert rows[0] == HEADER
        assert rows[1:] == [
            ["a", "m1", "notes", "free", "xe", "0", "Write about Kim (xe).", "Kim said xe would.", "1", "study"],
            ["b", "m1", "notes", "free", "xe", "3", "Write about Kim (xe).", "Kim said she would.", "0", "study"],
            # A formula-like cell is quoted for spreadsheets; the unstated pronoun leaves the heuristic empty.
            ["c", "m2", "notes", "zero-shot", "", "0", '\'=HYPERLINK("x")', "'-1 + 2 is what Kim wrote.", "", "study"],
            [gold.public_id, "m1", "notes", "free", "he", "", "C", "He left.", "1", "gold"],
        ]

    def test_the_file_imports_again_as_the_same_items(self, pool, tmp_path):
        out = tmp_path / "items.csv"
        call_command("export_pool", "--pool", "byos", "--out", str(out), stdout=io.StringIO())
        PoolItem.objects.filter(kind=GOLD).delete()
        call_command("export_pool", "--pool", "byos", "--out", str(out), stdout=io.StringIO())
        text = out.read_text(encoding="utf-8").replace("'=HYPERLINK", "=HYPERLINK").replace("'-1 + 2", "-1 + 2")
        (tmp_path / "again.csv").write_text(text, encoding="utf-8")

        generations_import(paths=[tmp_path / "again.csv"], pool_name="copy")

        fields = ["external_id", "model_name", "dataset", "setting", "pronoun", "context", "continuation"]
        fields += ["heuristic_correct", "sample_index"]
        original = list(PoolItem.objects.filter(pool=pool).order_by("pk").values_list(*fields))
        copied = list(PoolItem.objects.filter(pool__name="copy").order_by("pk").values_list(*fields))
        assert copied == original

    def test_an_unknown_pool_is_an_error(self, db, tmp_path):
        with pytest.raises(CommandError, match="no pool named 'nope'"):
            call_command("export_pool", "--pool", "nope", "--out", str(tmp_path / "x.csv"))
        assert not Path(tmp_path / "x.csv").exists()


@pytest.mark.django_db
class TestPoolItemsDownload:
    @pytest.mark.parametrize("role", ["admin", "researcher"])
    def test_researchers_and_admins_download_the_same_file(self, client, people, pool, role, tmp_path):
        client.login(username=people[role].username, password=PASSWORD)
        out = tmp_path / "items.csv"
        call_command("export_pool", "--pool", "byos", "--out", str(out), stdout=io.StringIO())

        response = client.get(reverse("annotation:pool-items", args=[pool.name]))

        assert response.status_code == 200
        assert response["Content-Disposition"] == 'attachment; filename="byos-items.csv"'
        assert b"".join(response.streaming_content).decode() == out.read_text(encoding="utf-8")

    @pytest.mark.parametrize("role", ["annotator", "outsider"])
    def test_others_are_refused(self, client, people, pool, role):
        client.login(username=people[role].username, password=PASSWORD)

        response = client.get(reverse("annotation:pool-items", args=[pool.name]))

        assert response.status_code == 403

    def test_without_login_it_asks_for_one(self, client, pool):
        response = client.get(reverse("annotation:pool-items", args=[pool.name]))

        assert response.status_code == 302 and "login" in response["Location"]

    def test_the_pool_page_links_it(self, client, people, pool):
        client.login(username=people["researcher"].username, password=PASSWORD)

        page = client.get(reverse("annotation:pool-detail", args=[pool.name])).content.decode()

        assert reverse("annotation:pool-items", args=[pool.name]) in page
