"""`pair_pool`: a blinded pool of stereotype pairs, its label set (the four dimensions, in words), its pitfall flags,
its default guideline, and `export_pool`'s dataset and pair columns."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation, Assignment, Pool, PoolItem
from annotation.schema import DIMENSIONS, PITFALLS
from annotation.services.guidelines import pool_guideline
from tests.annotation.factories import pool_for
from tests.pairs.files import crows_file, stereoset_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def datasets(tmp_path):
    call_command("import_dataset", "crows-pairs", "--file", str(crows_file(tmp_path / "c.csv")), "--bias-type",
                 "gender", "--name", "bench-one", stdout=io.StringIO())  # fmt: skip
    call_command("import_dataset", "stereoset", "--file", str(stereoset_file(tmp_path / "s.json")), "--name",
                 "bench-two", stdout=io.StringIO())  # fmt: skip


def make(name="dims", seed="5") -> Pool:
    call_command("pair_pool", "--datasets", "bench-one,bench-two", "--name", name, "--seed", seed, stdout=io.StringIO())
    return Pool.objects.get(name=name)


def test_it_makes_a_pool_of_every_pair_labelled_by_dimension_with_the_guideline(datasets):
    pool = make()
    assert pool.labels == DIMENSIONS and pool.flags == "pitfalls" and pool.seed == 5
    items = list(PoolItem.objects.filter(pool=pool).select_related("pair").order_by("pk"))
    assert len(items) == 4 + 4
    for item in items:
        assert (item.context, item.continuation) == (item.pair.stereotypical, item.pair.anti_stereotypical)
        assert item.dataset == item.pair.dataset.name
    guideline = pool_guideline(pool=pool)
    assert guideline.version == 1
    assert "prefer *Roles and behaviors* over *Attitudes and beliefs*" in guideline.text


def test_it_draws_the_order_with_the_seed(datasets):
    def order(pool):
        return list(PoolItem.objects.filter(pool=pool).order_by("pk").values_list("external_id", flat=True))

    first, again, other = make("a", "5"), make("b", "5"), make("c", "6")
    assert order(first) == order(again) != order(other)
    assert sorted(order(first)) == sorted(order(other))


def test_it_refuses_unknown_datasets_and_an_existing_name(datasets):
    with pytest.raises(CommandError, match="not a dataset of pairs: nope"):
        call_command("pair_pool", "--datasets", "bench-one,nope", "--name", "x")
    make()
    with pytest.raises(CommandError, match="exists already"):
        make()


def test_it_shows_annotators_both_sentences_and_nothing_of_the_benchmark(datasets, api, client, annotator):
    pool = make()
    item = PoolItem.objects.filter(pool=pool).select_related("pair").order_by("pk").first()
    Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=0)
    api.force_authenticate(annotator)
    body = api.get("/api/annotate/next/").json()
    assert (body["context"], body["generation"]) == (item.pair.stereotypical, item.pair.anti_stereotypical)
    text = json.dumps(body).lower()
    for needle in ("bench-", "crows", "stereoset", "dataset", "bias_type", f'"{item.pair.source_id}"'):
        assert needle not in text
    client.force_login(annotator)
    response = client.get(f"/annotate/{pool.name}/")
    assert response.status_code == 200
    page = response.content.decode()
    for words in ("Personality traits", "Attitudes and beliefs", "Roles and behaviors", "Physical characteristics",
                  "Stereotypical sentence", "Anti-stereotypical sentence", *PITFALLS.values()):  # fmt: skip
        assert words in page
    assert "bench-one" not in page and "bench-two" not in page


def test_it_takes_the_pools_own_flags_and_refuses_another_pools(datasets, api, annotator):
    pool = make()
    item = PoolItem.objects.filter(pool=pool).first()
    Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=0)
    api.force_authenticate(annotator)
    refused = api.post("/api/annotations/", {"item": item.public_id, "label": "roles_and_behaviors",
                                             "tags": ["plural_xe"]}, format="json")  # fmt: skip
    assert refused.status_code == 400 and "not this pool's flags" in refused.content.decode()
    saved = api.post("/api/annotations/", {"item": item.public_id, "label": "roles_and_behaviors",
                                           "tags": ["swapped", "conceptualization"]}, format="json")  # fmt: skip
    assert saved.status_code in (200, 201), saved.content
    assert Annotation.objects.get(item=item).tags == ["conceptualization", "swapped"]
    _, (other,) = pool_for(annotator, items=1)
    refused = api.post("/api/annotations/", {"item": other.public_id, "label": "correct", "tags": ["swapped"]},
                       format="json")  # fmt: skip
    assert refused.status_code == 400 and "not this pool's flags" in refused.content.decode()


def test_export_pool_names_each_items_dataset_and_pair(datasets, tmp_path):
    pool = make()
    out = tmp_path / "pool.csv"
    call_command("export_pool", "--pool", pool.name, "--out", str(out), stdout=io.StringIO())
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert {(r["dataset"], r["pair"]) for r in rows} == {
        *(("bench-one", i) for i in ("0", "1", "2", "4")), *(("bench-two", i) for i in ("a1", "b2", "c3", "d4"))
    }  # fmt: skip
    grandma = next(r for r in rows if r["pair"] == "2")
    assert grandma["context"] == "Grandma cried at the film."


def test_it_puts_the_pool_in_the_project_named_and_refuses_an_unknown_one(datasets, researcher):
    call_command("project_add", "lab-b", "--members", researcher.username, stdout=io.StringIO())
    call_command("pair_pool", "--datasets", "bench-one", "--name", "in-b", "--project", "lab-b", stdout=io.StringIO())
    assert Pool.objects.get(name="in-b").project.name == "lab-b"
    assert make("plain").project.name == "default"
    with pytest.raises(CommandError, match="--project: no project 'nope'"):
        call_command("pair_pool", "--datasets", "bench-one", "--name", "x", "--project", "nope")
    assert not Pool.objects.filter(name="x").exists()
