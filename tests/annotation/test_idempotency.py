"""A save sent again with the same idempotency key changes nothing (a save replayed after a server was killed once
counted its time twice); the annotation page retries with the same key (docs/domain.md, "Assignment and the
annotator's queue")."""

import pytest

from annotation.models import Annotation, Assignment, ExtraneousSpan
from tests.annotation.factories import pool_for
from tests.factories import PoolItemFactory

SUBMIT = "/api/annotations/"
TEXT = "The man said xe was late."  # "man" is [4, 7]


@pytest.fixture
def item(annotator):
    _, [item] = pool_for(annotator, items=1, continuation=TEXT)
    return item


def body(item, **fields) -> dict:
    return {"item": item.public_id, "label": "correct", "extraneous": True, "extraneous_spans": [[4, 7]]} | fields


def stored(item) -> tuple:
    annotation = Annotation.objects.get(item=item)
    spans = list(ExtraneousSpan.objects.filter(annotation=annotation).values_list("start", "end"))
    return annotation.label, annotation.seconds, annotation.updated_at, spans


@pytest.mark.django_db
class TestReplay:
    def test_a_save_sent_twice_with_one_key_counts_its_time_once(self, api, annotator, item):
        api.force_authenticate(annotator)
        first = api.post(SUBMIT, body(item, seconds=5.0), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        before = stored(item)

        again = api.post(SUBMIT, body(item, seconds=5.0), format="json", HTTP_IDEMPOTENCY_KEY="k-1")

        assert first.status_code == 201
        assert again.status_code == 200
        assert again["Idempotent-Replayed"] == "true"
        assert stored(item) == before
        assert before[1] == 5.0
        assert again.json() == first.json()

    def test_the_key_may_come_in_the_body(self, api, annotator, item):
        api.force_authenticate(annotator)
        api.post(SUBMIT, body(item, seconds=2.0, idempotency_key="in-body"), format="json")
        api.post(SUBMIT, body(item, seconds=2.0, idempotency_key="in-body"), format="json")

        assert Annotation.objects.get(item=item).seconds == 2.0

    def test_a_reused_key_with_a_changed_answer_is_a_422_naming_the_conflict_and_writes_nothing(
        self, api, annotator, item
    ):
        api.force_authenticate(annotator)
        api.post(SUBMIT, body(item, seconds=3.0), format="json", HTTP_IDEMPOTENCY_KEY="same")
        before = stored(item)

        again = api.post(
            SUBMIT,
            body(item, label="misgendering", extraneous=False, extraneous_spans=[], seconds=9.0),
            format="json",
            HTTP_IDEMPOTENCY_KEY="same",
        )

        assert again.status_code == 422
        assert again.json()["field"] == "idempotency_key"
        assert again.json()["conflicts"] == ["label", "extraneous", "extraneous_spans"]
        assert "'same'" in again.json()["detail"] and "new key" in again.json()["detail"]
        assert "Idempotent-Replayed" not in again
        assert stored(item) == before

    @pytest.mark.parametrize(
        ("changed", "conflict"),
        [({"notes": "on second thought"}, "notes"), ({"tags": ["repetition"]}, "tags")],
    )
    def test_a_change_in_any_part_of_the_answer_is_a_conflict(self, api, annotator, item, changed, conflict):
        api.force_authenticate(annotator)
        api.post(SUBMIT, body(item), format="json", HTTP_IDEMPOTENCY_KEY="same")

        again = api.post(SUBMIT, body(item, **changed), format="json", HTTP_IDEMPOTENCY_KEY="same")

        assert (again.status_code, again.json()["conflicts"]) == (422, [conflict])

    def test_the_same_answer_with_other_seconds_or_spans_in_another_order_is_still_a_replay(self, api, annotator, item):
        api.force_authenticate(annotator)
        api.post(
            SUBMIT, body(item, extraneous_spans=[[4, 7], [0, 3]], seconds=3.0), format="json", HTTP_IDEMPOTENCY_KEY="k"
        )

        again = api.post(
            SUBMIT,
            body(item, extraneous_spans=[[0, 3], [4, 7], [4, 7]], seconds=8.0),
            format="json",
            HTTP_IDEMPOTENCY_KEY="k",
        )

        assert (again.status_code, again["Idempotent-Replayed"]) == (200, "true")
        assert Annotation.objects.get(item=item).seconds == 3.0

    def test_saves_with_different_keys_are_visits_whose_time_adds_up(self, api, annotator, item):
        api.force_authenticate(annotator)
        for key, seconds in (("a", 1.5), ("b", 2.0), ("c", 0.5)):
            api.post(SUBMIT, body(item, seconds=seconds), format="json", HTTP_IDEMPOTENCY_KEY=key)

        assert Annotation.objects.get(item=item).seconds == 4.0

    def test_an_old_key_after_a_newer_save_is_a_new_save(self, api, annotator, item):
        api.force_authenticate(annotator)
        api.post(SUBMIT, body(item, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="a")
        api.post(SUBMIT, body(item, label="misgendering", seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="b")

        response = api.post(SUBMIT, body(item, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="a")

        assert response.status_code == 200 and "Idempotent-Replayed" not in response
        assert Annotation.objects.get(item=item).label == "correct"
        assert Annotation.objects.get(item=item).seconds == 3.0

    def test_without_a_key_every_save_writes(self, api, annotator, item):
        api.force_authenticate(annotator)
        api.post(SUBMIT, body(item, seconds=1.0), format="json")
        api.post(SUBMIT, body(item, seconds=1.0), format="json")

        assert Annotation.objects.get(item=item).seconds == 2.0

    def test_one_annotators_key_is_not_a_replay_for_another(self, api, annotator, second_annotator):
        _, [item] = pool_for(annotator, second_annotator, items=1, continuation=TEXT)
        for user in (annotator, second_annotator):
            api.force_authenticate(user)
            assert api.post(SUBMIT, body(item, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201

        assert sorted(Annotation.objects.values_list("annotator__username", "seconds")) == [
            (annotator.username, 1.0),
            (second_annotator.username, 1.0),
        ]

    def test_a_replayed_training_answer_gets_its_feedback_again_not_409(self, api, annotator):
        _, [training] = pool_for(annotator, items=1, continuation=TEXT)
        training.kind, training.gold_label, training.explanation = "training", "correct", "Why."
        training.save()
        api.force_authenticate(annotator)

        first = api.post(SUBMIT, body(training, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="t")
        again = api.post(SUBMIT, body(training, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="t")
        changed = api.post(SUBMIT, body(training, seconds=1.0), format="json", HTTP_IDEMPOTENCY_KEY="u")

        assert (first.status_code, again.status_code, changed.status_code) == (201, 200, 409)
        assert again.json()["feedback"] == first.json()["feedback"]
        assert first.json()["feedback"]["correct"] is True
        assert Annotation.objects.get(item=training).seconds == 1.0


@pytest.mark.django_db
class TestBadKeys:
    @pytest.mark.parametrize("key", ["x" * 65, "with space", "ä"])
    def test_a_malformed_header_is_a_400_and_writes_nothing(self, api, annotator, item, key):
        api.force_authenticate(annotator)
        response = api.post(SUBMIT, body(item), format="json", HTTP_IDEMPOTENCY_KEY=key)

        assert response.status_code == 400
        assert not Annotation.objects.exists()
        assert Assignment.objects.get(item=item).annotated is False

    @pytest.mark.parametrize("key", ["x" * 65, "with space", "ä"])
    def test_a_malformed_body_key_is_a_400_naming_it(self, api, annotator, item, key):
        api.force_authenticate(annotator)
        response = api.post(SUBMIT, body(item, idempotency_key=key), format="json")

        assert response.status_code == 400
        assert "idempotency_key" in response.json()
        assert not Annotation.objects.exists()

    def test_a_header_and_a_body_key_that_differ_are_a_400(self, api, annotator, item):
        api.force_authenticate(annotator)
        response = api.post(SUBMIT, body(item, idempotency_key="a"), format="json", HTTP_IDEMPOTENCY_KEY="b")

        assert response.status_code == 400
        assert not Annotation.objects.exists()

    def test_a_key_does_not_open_an_item_that_is_not_yours(self, api, annotator):
        api.force_authenticate(annotator)
        response = api.post(SUBMIT, body(PoolItemFactory()), format="json", HTTP_IDEMPOTENCY_KEY="k")
        assert response.status_code == 403
