"""Generation fixtures: the registered default model, the demo datasets, and a registered two-layer model."""

from __future__ import annotations

import pytest

from generation.datasets.misgendered import dataset_import_misgendered
from generation.datasets.ruff import dataset_import_ruff
from generation.models import DEFAULT_MODEL_FIELDS, DEFAULT_MODEL_NAME, LanguageModel
from tests.conftest import DEMO


@pytest.fixture
def smollm2(db) -> LanguageModel:
    # The data migration registers it, but transactional tests flush the tables afterwards.
    model, _ = LanguageModel.objects.get_or_create(name=DEFAULT_MODEL_NAME, defaults=DEFAULT_MODEL_FIELDS)
    return model


@pytest.fixture
def demo_ruff(db):
    return dataset_import_ruff(templates_path=DEMO / "ruff_templates.tsv", name="demo-ruff").dataset


@pytest.fixture
def demo_misgendered(db):
    return dataset_import_misgendered(
        templates_path=DEMO / "misgendered_templates.csv",
        names_dir=DEMO / "names",
        names_per_template=3,
        seed=42,
        name="demo-misgendered",
    ).dataset


@pytest.fixture
def two_layer_row(db, two_layer_model, monkeypatch) -> LanguageModel:
    """A registered model whose jobs run on `two_layer_model` (tests/conftest.py): the default's registry fields under
    a name of its own, found loaded in the process cache. For the job tests that compare what a chunk wrote with
    sampling called directly on the same model."""
    from generation.engines.hf import loading

    row = LanguageModel.objects.create(name=f"{DEFAULT_MODEL_NAME}-2-layers", **DEFAULT_MODEL_FIELDS)
    monkeypatch.setitem(loading._cache, loading._cache_key(row), two_layer_model)
    # A load from the cache takes the row's batch size; the session's model gets its own back after the test.
    monkeypatch.setattr(two_layer_model, "batch_size", two_layer_model.batch_size)
    return row
