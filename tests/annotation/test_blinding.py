"""Blinding on the server: nothing an annotator can load reveals the model, the heuristic, the probability result,
the dataset row, or anyone else's label. Each test loads every annotator-reachable response and searches it."""

import json

import pytest

from annotation.models import Annotation, Assignment
from tests.annotation.factories import pool_for
from tests.factories import (
    AnnotationFactory,
    GenerationFactory,
    GenerationJobFactory,
    InstanceFactory,
    LanguageModelFactory,
    PoolFactory,
    PoolItemFactory,
    ProbResultFactory,
)

ITEM_KEYS = {"item", "context", "generation", "position", "total", "done", "labels", "previous", "next", "annotation"}
MODEL = "secret-model-7b"
SOURCE = "released_samples_llama.csv"


@pytest.fixture
def scene(annotator, second_annotator):
    """One item fully traceable to its origin, labelled by the other annotator too."""
    model = LanguageModelFactory(name=MODEL)
    job = GenerationJobFactory(model=model)
    instance = InstanceFactory(name="Quinn")
    generation = GenerationFactory(job=job, instance=instance, continuation=" He said the woman left.")
    ProbResultFactory(job=job, instance=instance, prediction="he", correct=False)
    pool = PoolFactory(name="blinded-pool")
    item = PoolItemFactory(
        pool=pool,
        generation=generation,
        model_name=MODEL,
        dataset="ruff",
        context=generation.context,
        continuation=generation.continuation,
        heuristic_correct=False,
        first_pronoun="He",
        source_file=SOURCE,
        source_line=4242,
        source_key="f" * 64,
        source_correct=False,
    )
    Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=0)
    Assignment.objects.create(pool=pool, item=item, annotator=second_annotator, position=0)
    AnnotationFactory(
        item=item, annotator=second_annotator, label="no_pronoun", notes="OTHER-PERSONS-NOTE", tags=["plural_xe"]
    )
    return {"item": item, "generation": generation, "instance": instance, "job": job}


FORBIDDEN = [
    MODEL,
    "heuristic",
    "first_pronoun",
    "model",
    "dataset",
    "ruff",
    "misgendered",
    "setting",
    "sample_index",
    "prob",
    "loss",
    "template",
    "source",
    SOURCE,
    "4242",
    "OTHER-PERSONS-NOTE",
]


def assert_blind(text: str, scene) -> None:
    lowered = text.lower()
    for needle in FORBIDDEN:
        assert needle.lower() not in lowered, f"{needle!r} leaked"
    # Row ids: the exact key sets below leave no room for them; the only id sent is the opaque public one.


@pytest.mark.django_db
class TestBlinding:
    def test_it_sends_only_the_blinded_keys_from_next(self, api, annotator, scene):
        api.force_authenticate(annotator)

        body = api.get("/api/annotate/next/").json()

        assert set(body) == ITEM_KEYS
        assert body["item"] == scene["item"].public_id
        assert body["annotation"] is None  # the other annotator's label is not shown
        assert_blind(json.dumps(body), scene)

    def test_it_sends_only_the_blinded_keys_from_the_item_view(self, api, annotator, scene):
        api.force_authenticate(annotator)
        api.post("/api/annotations/", {"item": scene["item"].public_id, "label": "correct"}, format="json")

        body = api.get(f"/api/annotate/items/{scene['item'].public_id}/").json()

        assert set(body) == ITEM_KEYS
        assert body["annotation"]["label"] == "correct"  # only the caller's own
        assert set(body["annotation"]) == {"label", "extraneous", "extraneous_spans", "notes", "tags"}
        assert_blind(json.dumps(body), scene)

    def test_it_echoes_only_the_callers_own_annotation_on_save(self, api, annotator, scene):
        api.force_authenticate(annotator)

        response = api.post("/api/annotations/", {"item": scene["item"].public_id, "label": "correct"}, format="json")

        assert set(response.json()) == {"item", "label", "extraneous", "extraneous_spans", "notes", "tags"}
        assert_blind(response.content.decode(), scene)

    def test_it_reveals_nothing_in_error_responses(self, api, annotator, scene):
        api.force_authenticate(annotator)
        bad = [
            api.post("/api/annotations/", {"item": scene["item"].public_id, "label": "nope"}, format="json"),
            api.post(
                "/api/annotations/",
                {
                    "item": scene["item"].public_id,
                    "label": "correct",
                    "extraneous": True,
                    "extraneous_spans": [[0, 999]],
                },
                format="json",
            ),
            api.get("/api/annotate/items/unknown/"),
        ]
        for response in bad:
            assert response.status_code in (400, 404)
            assert_blind(response.content.decode(), scene)

    def test_it_renders_no_item_data_into_the_annotation_page(self, client, annotator, scene):
        client.force_login(annotator)

        html = client.get("/annotate/").content.decode()

        assert_blind(html, scene)
        assert scene["item"].continuation not in html and scene["item"].public_id not in html

    def test_it_uses_opaque_random_item_ids(self, annotator):
        pool, items = pool_for(annotator, items=20)

        ids = [item.public_id for item in items]
        assert len(set(ids)) == 20
        for item in items:
            assert str(item.pk) != item.public_id and not item.public_id.isdigit() and len(item.public_id) >= 16
        # Ids are not ordered like the rows, so they leak no creation order.
        assert ids != sorted(ids)

    def test_it_keeps_the_other_annotators_work_intact_and_separate(self, api, annotator, second_annotator, scene):
        api.force_authenticate(annotator)

        api.post("/api/annotations/", {"item": scene["item"].public_id, "label": "misgendering"}, format="json")

        labels = dict(Annotation.objects.values_list("annotator__username", "label"))
        assert labels == {"ana": "misgendering", "bo": "no_pronoun"}
