"""The qualification round through the annotator API: training items first, feedback on each, and a study queue that
stays closed to whoever scores below the pool's pass mark (docs/domain.md, 'Assignment and the
annotator's queue')."""

import pytest

from annotation.models import Assignment
from annotation.selectors import qualification_status
from annotation.services import assignments_create
from tests.factories import PoolFactory, PoolItemFactory

NEXT = "/api/annotate/next/"
SUBMIT = "/api/annotations/"
EXPECTED = ["correct", "misgendering", "no_pronoun", "correct", "misgendering"]


@pytest.fixture
def pool(annotator):
    pool = PoolFactory(name="qualified", pass_mark=0.8)
    for n, label in enumerate(EXPECTED):
        PoolItemFactory(
            pool=pool,
            kind="training",
            gold_label=label,
            gold_extraneous=n == 1,
            explanation=f"Why item {n} is {label}.",
        )
    for _ in range(4):
        PoolItemFactory(pool=pool)
    PoolItemFactory(pool=pool, kind="gold", gold_label="correct")
    assignments_create(pool=pool, usernames=[annotator.username], seed=0)
    return pool


def save(api, public_id: str, label: str):
    return api.post(SUBMIT, {"item": public_id, "label": label}, format="json")


def answer_training(api, pool, *, wrong: int) -> list[dict]:
    """Go through the training items from next, getting the first `wrong` of them wrong; returns the feedback."""
    feedback = []
    for n in range(len(EXPECTED)):
        body = api.get(NEXT, {"pool": pool.name}).json()
        assert body["phase"] == "training" and body["position"] == n + 1
        expected = pool.items.get(public_id=body["item"]).gold_label
        label = expected if n >= wrong else next(other for other in pool.labels if other != expected)
        response = save(api, body["item"], label)
        assert response.status_code == 201
        feedback.append(response.json()["feedback"])
    return feedback


def study_item(pool, annotator):
    return Assignment.objects.filter(pool=pool, annotator=annotator, item__kind="study").first().item


@pytest.mark.django_db
class TestTrainingPhase:
    def test_it_serves_the_training_items_first_and_gives_feedback_on_each(self, api, annotator, pool):
        api.force_authenticate(annotator)

        feedback = answer_training(api, pool, wrong=1)

        served = {item.public_id: item for item in pool.items.filter(kind="training")}
        assert feedback[0]["correct"] is False and all(entry["correct"] for entry in feedback[1:])
        for entry in feedback:
            assert set(entry) == {"expected_label", "expected_extraneous", "explanation", "correct"}
        by_explanation = {item.explanation: item for item in served.values()}
        for entry in feedback:
            item = by_explanation[entry["explanation"]]
            assert (entry["expected_label"], entry["expected_extraneous"]) == (item.gold_label, item.gold_extraneous)

    def test_it_opens_the_study_queue_to_a_score_at_the_pass_mark(self, api, annotator, pool):
        api.force_authenticate(annotator)
        answer_training(api, pool, wrong=1)  # 4 of 5 = 0.8

        response = api.get(NEXT, {"pool": pool.name})

        assert response.status_code == 200 and response.json()["phase"] == "study"
        saved = save(api, response.json()["item"], "correct")
        assert saved.status_code == 201 and saved.json()["feedback"] is None
        assert qualification_status(pool=pool, annotator=annotator) == {
            "status": "passed",
            "correct": 4,
            "total": 5,
            "score": 0.8,
            "pass_mark": 0.8,
        }

    def test_it_says_in_progress_until_every_training_item_is_saved(self, api, annotator, pool):
        api.force_authenticate(annotator)
        for _ in range(2):
            body = api.get(NEXT, {"pool": pool.name}).json()
            save(api, body["item"], "misgendering")

        status = qualification_status(pool=pool, annotator=annotator)

        assert status["status"] == "in_progress" and status["total"] == 5 and status["score"] is None

    def test_it_refuses_to_change_a_saved_training_answer(self, api, annotator, pool):
        api.force_authenticate(annotator)
        body = api.get(NEXT, {"pool": pool.name}).json()
        save(api, body["item"], "misgendering")

        response = save(api, body["item"], "correct")

        assert response.status_code == 409
        assert "training answers cannot be changed" in response.json()["detail"]
        assert pool.items.get(public_id=body["item"]).annotations.get().label == "misgendering"


@pytest.mark.django_db
class TestFailedQualification:
    @pytest.fixture
    def failed(self, api, annotator, pool):
        api.force_authenticate(annotator)
        answer_training(api, pool, wrong=2)  # 3 of 5 = 0.6 < 0.8
        return pool

    QUALIFICATION = {"status": "failed", "correct": 3, "total": 5, "score": 0.6, "pass_mark": 0.8}

    def assert_closed(self, response):
        assert response.status_code == 403
        body = response.json()
        assert set(body) == {"detail", "qualification"}
        assert body["qualification"] == self.QUALIFICATION
        assert "3 of the 5 training items" in body["detail"] and "80%" in body["detail"]

    def test_next_answers_403_with_the_score(self, api, failed):
        self.assert_closed(api.get(NEXT, {"pool": failed.name}))
        self.assert_closed(api.get(NEXT))

    def test_study_and_gold_items_can_be_neither_fetched_nor_saved(self, api, annotator, failed):
        for kind in ("study", "gold"):
            item = Assignment.objects.filter(pool=failed, annotator=annotator, item__kind=kind).first().item

            self.assert_closed(api.get(f"/api/annotate/items/{item.public_id}/"))
            self.assert_closed(save(api, item.public_id, "correct"))

            assert not item.annotations.exists()

    def test_the_training_items_stay_readable(self, api, annotator, failed):
        item = Assignment.objects.filter(pool=failed, annotator=annotator, item__kind="training").first().item

        response = api.get(f"/api/annotate/items/{item.public_id}/")

        assert response.status_code == 200 and response.json()["phase"] == "training"

    def test_the_selector_and_the_pool_page_say_failed(self, client, researcher, annotator, failed):
        assert qualification_status(pool=failed, annotator=annotator) == self.QUALIFICATION
        client.force_login(researcher)

        html = client.get(f"/pools/{failed.name}/").content.decode()

        assert "failed" in html and "3 of 5" in html

    def test_other_annotators_and_pools_are_unaffected(self, api, annotator, second_annotator, failed):
        other = PoolFactory(name="no-training")
        PoolItemFactory(pool=other)
        assignments_create(pool=other, usernames=[annotator.username], seed=0)

        body = api.get(NEXT, {"pool": other.name}).json()

        assert body["phase"] == "study"
        assert qualification_status(pool=other, annotator=annotator)["status"] == "not_required"
        assert qualification_status(pool=failed, annotator=second_annotator)["status"] == "not_required"
