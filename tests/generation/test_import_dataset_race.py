"""Two imports under one name at the same moment: the later one answers as if the first had come before it."""

import threading

import pytest
from django.db import connection

from generation.datasets import writing
from generation.datasets.files import ImportFailed
from generation.datasets.ruff import dataset_import_ruff
from generation.models import Dataset, Instance
from tests.conftest import DEMO

RUFF = DEMO / "ruff_templates.tsv"


class _CheckMissesTheRow:
    """Stands in for `Dataset.objects.select_for_update()` at the moment a concurrent import has not committed yet."""

    def filter(self, **kwargs):
        return Dataset.objects.none()


@pytest.mark.django_db(transaction=True)
class TestConcurrentDatasetImports:
    def test_it_treats_a_name_taken_after_its_check_as_already_imported(self, monkeypatch):
        first = dataset_import_ruff(templates_path=RUFF, name="race")
        monkeypatch.setattr(writing.Dataset.objects, "select_for_update", lambda: _CheckMissesTheRow())

        second = dataset_import_ruff(templates_path=RUFF, name="race")

        assert first.created and not second.created
        assert second.dataset.pk == first.dataset.pk and second.instances == first.instances
        assert Dataset.objects.count() == 1

    def test_it_refuses_other_files_under_a_name_taken_after_its_check(self, monkeypatch, tmp_path):
        dataset_import_ruff(templates_path=RUFF, name="race")
        instances = Instance.objects.count()
        other = tmp_path / "other.tsv"
        lines = RUFF.read_text(encoding="utf-8").splitlines(keepends=True)
        other.write_text("".join(lines[:5]), encoding="utf-8")
        monkeypatch.setattr(writing.Dataset.objects, "select_for_update", lambda: _CheckMissesTheRow())

        with pytest.raises(ImportFailed, match="'race' was already imported from other files or arguments"):
            dataset_import_ruff(templates_path=other, name="race")

        assert Instance.objects.count() == instances

    @pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite serialises writers itself")
    def test_it_lets_two_threads_import_one_name_without_an_integrity_error(self):
        barrier = threading.Barrier(2)
        outcomes: list[object] = []

        def run():
            barrier.wait()
            try:
                outcomes.append(dataset_import_ruff(templates_path=RUFF, name="race").created)
            except Exception as exc:  # noqa: BLE001 - the test reports whatever escaped
                outcomes.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sorted(outcomes, key=repr) == [False, True]
        assert Dataset.objects.filter(name="race").count() == 1
