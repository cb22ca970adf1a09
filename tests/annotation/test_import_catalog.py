"""The import formats' catalog (annotation/services/imports/catalog.py): every entry parses a small file of its
format and previews it, writing nothing; an unknown format is refused with the list of known ones, by the catalog,
the imports API and `import_generations`; and a pool's items of generations come from one builder."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotation.models import Annotation, Pool, PoolItem
from annotation.services import generations_import
from annotation.services.imports.catalog import (
    UnknownImportFormat,
    import_format,
    import_formats,
    import_kinds,
)
from annotation.services.imports.reading import Upload
from annotation.services.pool import pool_items_from_generations
from generation.datasets.labels import dataset_label
from generation.models import Generation, Job
from judging.models import JudgeRun
from tests.annotation.factories import job_with_generations
from tests.generation.gifi_files import template_folder, variants_file

FREE_TEXT = (
    "item,model,dataset,context,generation,pronoun\n"
    "q1,model-a,own-study,Robin said that,xe would come.,xe\n"
    "q2,model-b,own-study,Kai wrote that,she is late.,\n"
)


def _sample_pool() -> Pool:
    """A pool of two free-text items, q1 and q2 (written by the import, not by the catalog under test)."""
    generations_import(paths=[Upload("study.csv", FREE_TEXT.encode())], pool_name="catalog-pool")
    return Pool.objects.get(name="catalog-pool")


def _gifi_sample(tmp_path) -> Upload:
    out = io.StringIO()
    call_command("import_dataset", "gifi", "--templates", str(template_folder(tmp_path / "t")), stdout=out)
    path = variants_file(tmp_path / "gen.csv", "gdr", {(0, "he"): ["He opens it."], (1, "xe"): ["Xe reads.", "NA"]})
    return Upload("gen.csv", path.read_bytes())


# Per format: (its options as a request gives them, a small file of it, what each of its rows reads as).
SAMPLES = {
    "generations": (
        {"labels": ""},
        lambda pool, tmp_path: Upload("more.csv", FREE_TEXT.replace("q1", "q3").replace("q2", "q4").encode()),
        [("q3", "model-a", "xe"), ("q4", "model-b", "")],
    ),
    "labels": (
        {"wide": "false"},
        lambda pool, tmp_path: Upload("labels.csv", b"item,annotator,label\nq1,ann-1,correct\nq2,ann-1,misgendering\n"),
        [("q1", "ann-1", "correct"), ("q2", "ann-1", "misgendering")],
    ),
    "judge_labels": (
        {"judge": "outside", "extend_labels": "false"},
        lambda pool, tmp_path: Upload("judge.csv", b"item,label,confidence\nq2,no_pronoun,0.75\n"),
        [("q2", "no_pronoun", 0.75)],
    ),
    "gifi": (
        {"part": "gdr", "model": "gpt-x"},
        lambda pool, tmp_path: _gifi_sample(tmp_path),
        [("gdr", "he", "He opens it."), ("gdr", "xe", "Xe reads."), ("gdr", "xe", "")],
    ),
}
FIELDS = {
    "generations": ("item", "model", "pronoun"),
    "labels": ("item", "annotator", "label"),
    "judge_labels": ("item", "label", "confidence"),
    "gifi": ("part", "pronoun", "generation"),
}


def test_every_format_in_the_catalog_has_a_sample_here():
    assert sorted(entry.name for entry in import_formats()) == sorted(SAMPLES)


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SAMPLES))
def test_every_format_parses_a_small_file_and_previews_it_writing_nothing(name, tmp_path):
    pool = _sample_pool()
    entry = import_format(name)
    given, sample, expected = SAMPLES[name]
    source = sample(pool, tmp_path)
    options = entry.options_from(given)
    target = pool if entry.into_pool else None
    items, annotations, runs, jobs = (
        PoolItem.objects.count(),
        Annotation.objects.count(),
        JudgeRun.objects.count(),
        Job.objects.count(),
    )

    parsed = entry.parse(target, source, options, name)
    preview = entry.preview(target, [source], options, name)

    assert parsed.errors == []
    assert [tuple(row[field] for field in FIELDS[name]) for row in parsed.rows] == expected
    assert preview["ok"] is True and preview["errors"] == []
    assert preview["rows"] == parsed.rows[: len(preview["rows"])] and preview["rows"]
    assert (PoolItem.objects.count(), Annotation.objects.count(), JudgeRun.objects.count(), Job.objects.count()) == (
        items, annotations, runs, jobs,
    )  # fmt: skip


@pytest.mark.django_db
def test_a_bad_row_is_named_by_file_line_and_field_in_parse_and_preview():
    pool = _sample_pool()
    entry = import_format("generations")
    bad = Upload("bad.csv", b"item,model,dataset,context,generation\nq9,,own-study,Robin said,hi\n")

    parsed = entry.parse(pool, bad, entry.options_from({}), "study")
    preview = entry.preview(pool, [bad], entry.options_from({}), "study")

    assert parsed.rows == [] and parsed.errors == ["bad.csv:2: model: empty"]
    assert preview["ok"] is False and preview["errors"] == ["bad.csv:2: model: empty"]


def test_an_unknown_format_is_refused_with_the_known_ones():
    with pytest.raises(UnknownImportFormat) as refused:
        import_format("xml")

    message = str(refused.value)
    assert message.startswith("unknown import format 'xml'; known: ")
    assert message.removeprefix("unknown import format 'xml'; known: ").split(", ") == import_kinds()
    assert {"generations", "study", "gold", "training", "labels", "judge_labels", "gifi"} == set(import_kinds())


def test_an_options_problem_names_its_field():
    with pytest.raises(ValueError, match=r"^part: 'nope': use one of gdr, counterfactual, saof, pe$"):
        import_format("gifi").options_from({"part": "nope", "model": "m"})
    with pytest.raises(ValueError, match=r"^labels: "):
        import_format("generations").options_from({"labels": "only-one"})


@pytest.mark.django_db
def test_the_imports_api_refuses_an_unknown_kind_with_the_known_ones(researcher):
    pool = _sample_pool()
    client = APIClient()
    client.force_authenticate(researcher)

    response = client.post(
        f"/api/pools/{pool.name}/imports/", {"kind": "xml", "files": [SimpleUploadedFile("x.csv", b"x")]}
    )

    assert response.status_code == 400
    message = response.json()["kind"][0]
    assert message.startswith('"xml" is not a valid choice; known: ')
    known = message.split("known: ")[1].split(", ")
    assert set(known) == {"generations", "study", "gold", "training", "labels", "judge_labels"}  # into a pool


def test_import_generations_refuses_an_unknown_format_with_the_known_ones(tmp_path):
    with pytest.raises(CommandError) as refused:
        call_command("import_generations", str(tmp_path / "x.csv"), "--format", "xml", stdout=io.StringIO())

    assert "invalid choice: 'xml'" in str(refused.value)
    assert "'generations'" in str(refused.value) and "'gifi'" in str(refused.value)


@pytest.mark.django_db
def test_pool_items_of_generations_carry_each_generations_fields():
    job = job_with_generations(instances_per_pronoun=1, samples=2, pronouns=("xe",), settings=("pre",))
    pool = Pool.objects.create(name="built")
    generations = list(Generation.objects.filter(job=job).select_related("instance", "job__model"))

    items = pool_items_from_generations(pool, generations, probability={g.pk: 0.5 for g in generations})

    assert [
        (i.generation_id, i.model_name, i.dataset, i.setting, i.pronoun, i.sample_index, i.template, i.context,
         i.continuation, i.heuristic_correct, i.first_pronoun, i.inclusion_probability)
        for i in items
    ] == [
        (g.pk, "test-model", dataset_label(job.dataset), "pre", "xe", g.sample_index, g.instance.text, g.context,
         g.continuation, g.heuristic_correct, g.first_pronoun, 0.5)
        for g in generations
    ]  # fmt: skip
    assert {item.pool_id for item in items} == {pool.pk} and not PoolItem.objects.exists()
    assert [i.inclusion_probability for i in pool_items_from_generations(pool, generations, job=job)] == [None, None]
