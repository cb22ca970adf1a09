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

ITEM_KEYS = {
    "item",
    "context",
    "generation",
    "phase",
    "position",
    "total",
    "done",
    "labels",
    "previous",
    "next",
    "annotation",
}
SAVED_KEYS = {"item", "label", "extraneous", "extraneous_spans", "notes", "tags", "feedback"}
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

        assert set(response.json()) == SAVED_KEYS and response.json()["feedback"] is None
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


def shape(value):
    """The JSON value with every scalar replaced by its type: what a client could tell two payloads apart by."""
    if isinstance(value, dict):
        return {key: shape(entry) for key, entry in value.items()}
    if isinstance(value, list):
        return [shape(entry) for entry in value]
    return type(value).__name__


@pytest.mark.django_db
class TestGoldItemsLookLikeStudyItems:
    """A gold item (known answer, hidden among the study items) must be indistinguishable from a study item in
    everything an annotator loads: same keys, same value shapes, same phase, nothing about its answer."""

    @pytest.fixture
    def pair(self, annotator, second_annotator):
        pool = PoolFactory(name="with-gold")
        study = PoolItemFactory(pool=pool, continuation="The man said xe was late.")
        gold = PoolItemFactory(
            pool=pool,
            continuation="The man said he was late.",
            kind="gold",
            gold_label="misgendering",
            gold_extraneous=True,
            explanation="GOLD-EXPLANATION: he is not xe.",
        )
        before, after = PoolItemFactory(pool=pool), PoolItemFactory(pool=pool)
        # The same place in the same kind of queue for both: one item before it, one after.
        for user, item in ((annotator, study), (second_annotator, gold)):
            for position, entry in enumerate([before, item, after]):
                Assignment.objects.create(pool=pool, item=entry, annotator=user, position=position)
        return study, gold

    def responses(self, api, item) -> list:
        """Every annotator endpoint's answer about the item: next (while it is the open one), the item view
        before and after the save, the save and the edit."""
        first = api.get("/api/annotate/next/").json()
        api.post("/api/annotations/", {"item": first["item"], "label": "correct"}, format="json")
        served = api.get("/api/annotate/next/").json()
        assert served["item"] == item.public_id
        before = api.get(f"/api/annotate/items/{item.public_id}/").json()
        body = {"item": item.public_id, "label": "correct", "extraneous": True, "extraneous_spans": [[4, 7]]}
        saved = api.post("/api/annotations/", body, format="json")
        edited = api.post("/api/annotations/", {**body, "notes": "again"}, format="json")
        after = api.get(f"/api/annotate/items/{item.public_id}/").json()
        assert (saved.status_code, edited.status_code) == (201, 200)
        return [served, before, saved.json(), edited.json(), after]

    def test_every_endpoint_answers_the_same_shape_for_both(self, api, annotator, second_annotator, pair):
        study, gold = pair
        api.force_authenticate(annotator)
        study_responses = self.responses(api, study)
        api.force_authenticate(second_annotator)
        gold_responses = self.responses(api, gold)

        for study_body, gold_body in zip(study_responses, gold_responses, strict=True):
            assert set(study_body) == set(gold_body)
            assert shape(study_body) == shape(gold_body)
            if "phase" in gold_body:
                assert gold_body["phase"] == study_body["phase"] == "study"
            if "feedback" in gold_body:
                assert gold_body["feedback"] is None and study_body["feedback"] is None
        text = json.dumps(gold_responses).lower()
        for needle in ("gold", "kind", "explanation", "expected", "training"):
            assert needle not in text, f"{needle!r} leaked"
