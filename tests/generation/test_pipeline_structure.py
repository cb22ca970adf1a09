"""How the generation pipeline is put together: job defaults defined once, the codebook a job uses is the one stored
with its dataset, and the progress bar. (Its imports are checked with the whole tree's in tests/test_architecture.py.)"""

import dataclasses
from io import StringIO

import pytest


def test_the_job_defaults_are_defined_once_and_read_everywhere(smollm2, demo_ruff):
    from generation.apis import JobListCreateApi
    from generation.forms import JobForm
    from generation.management.commands.generate import Command
    from generation.models import JOB_DEFAULTS, GenerationRun
    from generation.parameters import JobParameters

    documented = {"samples": 5, "max_new_tokens": 50, "top_k": 50, "top_p": 0.95, "num_beams": 1, "seed": 0}
    assert {name: getattr(JOB_DEFAULTS, name) for name in documented} == documented

    parser = Command().create_parser("manage.py", "generate")
    service = {field.name: field for field in dataclasses.fields(JobParameters)}
    api = JobListCreateApi.InputSerializer().fields
    form = JobForm().fields
    for name, value in documented.items():
        assert GenerationRun._meta.get_field(name).default == value, name
        assert parser.get_default(name) == value, name
        assert service[name].default == value, name
        assert api[name].default == value, name
        assert form[name].initial == value, name


def test_a_job_reads_the_codebook_stored_with_its_dataset(demo_ruff, demo_misgendered):
    from generation.datasets.registry import codebook_for
    from generation.models import PronounForm
    from generation.selectors import dataset_codebook

    for dataset in (demo_ruff, demo_misgendered):
        assert dataset_codebook(dataset=dataset).table == codebook_for(dataset.kind).table
    PronounForm.objects.filter(dataset=demo_ruff, base="xe", form="acc").update(surface="xir")
    stored = dataset_codebook(dataset=demo_ruff)
    assert stored.surface("xe", "acc") == "xir" and "xir" in stored.omega and "xem" not in stored.omega

    PronounForm.objects.filter(dataset=demo_ruff).delete()
    with pytest.raises(ValueError, match="demo-ruff.*no stored codebook"):
        dataset_codebook(dataset=demo_ruff)


def test_the_generate_command_shows_a_progress_bar_with_elapsed_time_and_time_left(
    smollm2, demo_ruff, monkeypatch, capsys
):
    """tqdm's `[elapsed<left]`, moving after each written step (the model replaced by a stand-in)."""
    from django.core.management import call_command

    from tests.generation.test_recovery import FakeModel

    fake = FakeModel()
    monkeypatch.setattr("generation.engines.hf.engine.model_load", lambda **kwargs: object())
    monkeypatch.setattr("generation.engines.hf.engine.score_instances", fake.score)
    monkeypatch.setattr("generation.engines.hf.engine.sample_continuations", fake.sample)
    monkeypatch.setattr("generation.engines.hf.engine.sample_groups", fake.sample_groups)
    call_command(
        "generate",
        "--dataset=demo-ruff",
        "--per-pronoun=1",
        "--samples=2",
        "--wait",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    updates = capsys.readouterr().err.split("\r")
    moving = [update for update in updates if "/16 [" in update]
    counts = [int(update.split("|")[-1].split("/")[0]) for update in moving]
    assert [n for i, n in enumerate(counts) if i == 0 or n != counts[i - 1]] == list(range(0, 17, 2))
    assert moving[-1].split("|")[-1].startswith(" 16/16 [") and "<00:00" in moving[-1]  # [elapsed<left, rate]
