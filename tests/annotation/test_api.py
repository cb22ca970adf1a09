"""The annotator API contract: next, item, submit; every error with its status and message."""

import pytest

from annotation.models import Annotation, ExtraneousSpan
from tests.annotation.factories import pool_for
from tests.factories import PoolFactory, PoolItemFactory

NEXT = "/api/annotate/next/"
SUBMIT = "/api/annotations/"
TEXT = "The man said xe was late."  # "man" is [4, 7]


def item_url(public_id: str) -> str:
    return f"/api/annotate/items/{public_id}/"


@pytest.fixture
def work(annotator):
    pool, items = pool_for(annotator, items=3, continuation=TEXT)
    return pool, items


def submit(api, item, **fields):
    body = {
        "item": item.public_id,
        "label": "correct",
        "extraneous": False,
        "extraneous_spans": [],
        "notes": "",
        "tags": [],
    }
    body.update(fields)
    return api.post(SUBMIT, body, format="json")


@pytest.mark.django_db
class TestNext:
    def test_it_returns_the_first_unlabelled_item_with_its_position(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)

        response = api.get(NEXT)

        assert response.status_code == 200
        body = response.json()
        assert body["item"] == items[0].public_id
        assert (body["context"], body["generation"]) == (items[0].context, TEXT)
        assert (body["position"], body["total"], body["done"]) == (1, 3, 0)
        assert body["previous"] is None and body["next"] == items[1].public_id
        assert body["annotation"] is None

    def test_it_moves_on_after_a_save_and_says_204_when_done(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)

        submit(api, items[0])
        assert api.get(NEXT).json()["position"] == 2
        submit(api, items[1])
        submit(api, items[2])

        response = api.get(NEXT)
        assert response.status_code == 204 and response.content == b""

    def test_it_can_be_limited_to_one_pool(self, api, annotator, work):
        pool, items = work
        other, other_items = pool_for(annotator, items=1, pool=PoolFactory(name="zzz"))
        api.force_authenticate(annotator)

        assert api.get(NEXT, {"pool": "zzz"}).json()["item"] == other_items[0].public_id
        assert api.get(NEXT, {"pool": pool.name}).json()["item"] == items[0].public_id
        assert api.get(NEXT).json()["total"] == 4


@pytest.mark.django_db
class TestItem:
    def test_it_returns_an_own_item_with_the_saved_annotation_for_going_back(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)
        submit(
            api,
            items[0],
            label="misgendering",
            extraneous=True,
            extraneous_spans=[[4, 7]],
            notes="hm",
            tags=["repetition"],
        )

        body = api.get(item_url(items[0].public_id)).json()

        assert body["annotation"] == {
            "label": "misgendering",
            "extraneous": True,
            "extraneous_spans": [[4, 7]],
            "notes": "hm",
            "tags": ["repetition"],
        }
        assert api.get(NEXT).json()["previous"] == items[0].public_id

    def test_it_hides_unknown_and_other_peoples_items_alike(self, api, annotator, second_annotator, work):
        _, theirs = pool_for(second_annotator, items=1, pool=PoolFactory())
        api.force_authenticate(annotator)

        for url in (item_url(theirs[0].public_id), item_url("no-such-item")):
            response = api.get(url)
            assert response.status_code == 404
            assert response.json() == {"detail": "no such item among yours"}


@pytest.mark.django_db
class TestSubmit:
    def test_it_creates_with_201_then_updates_with_200(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)

        first = submit(api, items[0], label="correct", seconds=2.5)
        second = submit(
            api,
            items[0],
            label="no_pronoun",
            extraneous=True,
            extraneous_spans=[[4, 7]],
            tags=["degeneration"],
            seconds=1.5,
        )

        assert first.status_code == 201 and second.status_code == 200
        assert second.json() == {
            "item": items[0].public_id,
            "label": "no_pronoun",
            "extraneous": True,
            "extraneous_spans": [[4, 7]],
            "notes": "",
            "tags": ["degeneration"],
            "feedback": None,
        }
        annotation = Annotation.objects.get()
        assert (annotation.label, annotation.extraneous, annotation.seconds) == ("no_pronoun", True, 4.0)
        assert list(annotation.spans.values_list("start", "end")) == [(4, 7)]

    def test_a_first_save_stores_its_spans_distinct_and_sorted_up_to_the_last_character(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)
        spans = [[len(TEXT) - 3, len(TEXT)], [0, 3], [len(TEXT) - 3, len(TEXT)]]

        response = submit(api, items[0], extraneous=True, extraneous_spans=spans)

        assert response.status_code == 201
        assert response.json()["extraneous_spans"] == [[0, 3], [len(TEXT) - 3, len(TEXT)]]
        stored = ExtraneousSpan.objects.filter(annotation__item=items[0], annotation__annotator=annotator)
        assert list(stored.values_list("start", "end")) == [(0, 3), (len(TEXT) - 3, len(TEXT))]

    def test_it_replaces_the_spans_on_update(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)
        submit(api, items[0], extraneous=True, extraneous_spans=[[4, 7], [0, 3]])

        submit(api, items[0], extraneous=False, extraneous_spans=[])

        assert not ExtraneousSpan.objects.exists()
        assert Annotation.objects.get().extraneous is False

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            (
                {"label": "plural_they"},
                "label 'plural_they' is not one of this pool's labels: correct, misgendering, no_pronoun",
            ),
            ({"extraneous": True, "extraneous_spans": [[4, 99]]}, "span 0 [4, 99] must satisfy 0 <= start < end <= 25"),
            ({"extraneous": True, "extraneous_spans": [[7, 7]]}, "span 0 [7, 7] must satisfy 0 <= start < end <= 25"),
            ({"extraneous": True, "extraneous_spans": [[7, 4]]}, "span 0 [7, 4] must satisfy"),
            ({"extraneous": True, "extraneous_spans": [[-1, 4]]}, "span 0 [-1, 4] must satisfy"),
            (
                {"extraneous": False, "extraneous_spans": [[4, 7]]},
                "extraneous words are marked but extraneous is false",
            ),
            ({"tags": ["repetition", "rude"]}, "unknown tag(s) 'rude'"),
        ],
    )
    def test_it_rejects_bad_values_with_400(self, api, annotator, work, fields, message):
        _, items = work
        api.force_authenticate(annotator)

        response = submit(api, items[0], **fields)

        assert response.status_code == 400
        assert message in response.json()["detail"]
        assert not Annotation.objects.exists()

    def test_it_rejects_a_label_outside_a_custom_label_set(self, api, annotator):
        pool, items = pool_for(annotator, items=1, pool=PoolFactory(labels=["correct", "plural_they"]))
        api.force_authenticate(annotator)

        first = submit(api, items[0], label="misgendering")  # a label of the default set, not of this pool's
        assert first.status_code == 400 and "correct, plural_they" in first.json()["detail"]
        assert not Annotation.objects.exists()
        assert submit(api, items[0], label="plural_they").status_code == 201
        response = submit(api, items[0], label="misgendering")
        assert response.status_code == 400 and "correct, plural_they" in response.json()["detail"]
        assert Annotation.objects.get().label == "plural_they"

    def test_it_rejects_malformed_bodies_with_400_per_field(self, api, annotator, work):
        _, items = work
        api.force_authenticate(annotator)

        response = api.post(
            SUBMIT, {"item": items[0].public_id, "extraneous_spans": [[1, 2, 3]], "seconds": -1}, format="json"
        )

        assert response.status_code == 400
        assert set(response.json()) == {"label", "extraneous_spans", "seconds"}

    @pytest.mark.parametrize("spans", [[5], [[1, "2"]], [[True, 2]], [[1.5, 2]], "1-2", [[1, 2, 3]], {"0": [1, 2]}])
    def test_it_rejects_spans_that_are_not_integer_pairs(self, api, annotator, work, spans):
        _, items = work
        api.force_authenticate(annotator)

        response = submit(api, items[0], extraneous=True, extraneous_spans=spans)

        assert response.status_code == 400
        assert response.json() == {"extraneous_spans": ["Expected a list of [start, end] pairs of integers."]}
        assert not Annotation.objects.exists()

    def test_it_refuses_an_item_assigned_to_someone_else_with_403(self, api, annotator, second_annotator):
        _, theirs = pool_for(second_annotator, items=1)
        api.force_authenticate(annotator)

        response = submit(api, theirs[0])

        assert response.status_code == 403
        assert response.json()["detail"] == "this item is not assigned to you"
        assert not Annotation.objects.exists()

    def test_it_refuses_an_unassigned_item_with_403(self, api, annotator):
        item = PoolItemFactory()
        api.force_authenticate(annotator)

        assert submit(api, item).status_code == 403

    def test_it_says_404_for_an_unknown_item(self, api, annotator, work):
        api.force_authenticate(annotator)

        response = api.post(SUBMIT, {"item": "nope", "label": "correct"}, format="json")

        assert response.status_code == 404 and response.json()["detail"] == "no item 'nope'"
