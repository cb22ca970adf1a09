"""Jobs over a RUFF distractor set take --distractors N and --sample-seed S and hold only those instances."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from generation.jobs.generation_kind import GenerationKind
from generation.models import Instance
from generation.parameters import JobParameterError, job_parameters_validate
from tests.conftest import DATASETS
from tests.factories import DatasetFactory, InstanceFactory

TASK = DATASETS / "ruff" / "distractors" / "task.tsv"
CONTEXT = DATASETS / "ruff" / "distractors" / "context.tsv"


@pytest.fixture(scope="module")
def distractor_set_imported(module_db):
    """The distractor set, imported once per module (the tests only read it)."""
    with module_db():
        call_command(
            "import_dataset", "ruff-distractors", "--task", str(TASK), "--context", str(CONTEXT),
            "--distractors", "0-1", "--sample-seed", "13", stdout=io.StringIO(),
        )  # fmt: skip


@pytest.fixture
def distractor_set(distractor_set_imported, db):
    """The module's distractor set (its rows roll back with the module)."""


def test_it_holds_only_the_asked_count_and_sample(distractor_set):
    params = job_parameters_validate(dataset="ruff-distractors", distractors=1, sample_seed="13", pronouns=["xe"])

    ids = GenerationKind().units(params=params)

    assert len(ids) == 2_160 // 4
    chosen = Instance.objects.filter(pk__in=ids)
    assert set(chosen.values_list("distractors", "sample_13", "pronoun")) == {(1, True, "xe")}


def test_it_takes_none_as_every_instance(distractor_set):
    params = job_parameters_validate(dataset="ruff-distractors", distractors=0, sample_seed="none")

    assert params.sample_seed is None
    assert len(GenerationKind().units(params=params)) == 2_160


def test_it_refuses_distractors_on_another_dataset(db):
    InstanceFactory(template__dataset=DatasetFactory(name="plain"))

    with pytest.raises(JobParameterError) as error:
        job_parameters_validate(dataset="plain", distractors=2)

    assert "not a RUFF distractor set" in error.value.errors["distractors"]


def test_it_refuses_a_seed_ruff_does_not_use(distractor_set):
    with pytest.raises(JobParameterError) as error:
        job_parameters_validate(dataset="ruff-distractors", sample_seed="7")

    assert "sample_seed" in error.value.errors
