"""The qualification round through the annotator API: training items first, feedback on each, and a study queue that
stays closed to whoever scores below the pool's pass mark (docs/domain.md, 'Assignment and the
annotator's queue')."""

import io
import json

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
            assert set(entry) == {
                "expected_label",
                "expected_extraneous",
                "explanation",
                "correct",
                "extraneous_correct",
            }
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


@pytest.mark.django_db
class TestFeedbackParts:
    def test_it_says_which_part_of_a_training_answer_was_wrong(self, api, annotator, pool):
        api.force_authenticate(annotator)
        body = api.get(NEXT, {"pool": pool.name}).json()
        item = pool.items.get(public_id=body["item"])

        response = api.post(
            SUBMIT,
            {"item": item.public_id, "label": item.gold_label, "extraneous": not item.gold_extraneous},
            format="json",
        )

        feedback = response.json()["feedback"]
        assert feedback["correct"] is True  # the label, which the score counts
        assert feedback["extraneous_correct"] is False
        assert feedback["expected_extraneous"] is item.gold_extraneous

    def test_the_flag_part_is_null_where_the_item_expects_no_flag(self, api, annotator, pool):
        pool.items.filter(kind="training").update(gold_extraneous=None)
        api.force_authenticate(annotator)
        body = api.get(NEXT, {"pool": pool.name}).json()

        feedback = save(api, body["item"], "correct").json()["feedback"]

        assert feedback["extraneous_correct"] is None


@pytest.mark.django_db
class TestSecondChance:
    @pytest.fixture
    def failed(self, api, annotator, pool):
        api.force_authenticate(annotator)
        answer_training(api, pool, wrong=2)  # 3 of 5 = 0.6 < 0.8
        return pool

    def test_the_failure_says_its_reason_once_and_what_to_do(self, api, failed):
        detail = api.get(NEXT, {"pool": failed.name}).json()["detail"]

        assert detail.count("training items") == 1 and detail.count("80%") == 1
        assert "new training round" in detail

    def test_a_reset_gives_a_new_training_round_and_is_audited(self, api, annotator, researcher, failed):
        from auditlog.models import LogEntry

        from annotation.services.qualification import qualification_reset

        before = qualification_reset(pool=failed, username=annotator.username, user=researcher)

        assert before["status"] == "failed" and before["correct"] == 3
        assert qualification_status(pool=failed, annotator=annotator)["status"] == "in_progress"
        assert not failed.items.filter(kind="training", annotations__annotator=annotator).exists()
        assert not Assignment.objects.filter(pool=failed, annotator=annotator, item__kind="training", annotated=True)
        entry = LogEntry.objects.get(additional_data__event="pool.qualification_reset")
        assert entry.actor == researcher and entry.additional_data["annotator"] == annotator.username
        assert len(entry.additional_data["answers"]) == 5
        assert sum(a["label"] == a["expected"] for a in entry.additional_data["answers"]) == 3
        # The new round starts at the first training item, and passing it opens the study queue.
        answer_training(api, failed, wrong=0)
        assert api.get(NEXT, {"pool": failed.name}).json()["phase"] == "study"

    def test_only_a_failed_round_can_be_reset(self, annotator, pool):
        from annotation.services.qualification import QualificationError, qualification_reset

        with pytest.raises(QualificationError, match="has not finished the training round"):
            qualification_reset(pool=pool, username=annotator.username)
        with pytest.raises(QualificationError, match="no user named 'nobody'"):
            qualification_reset(pool=pool, username="nobody")

    def test_a_lower_pass_mark_opens_the_queue_and_is_audited(self, api, failed):
        from auditlog.models import LogEntry
        from django.core.management import call_command

        out = io.StringIO()
        call_command("pool_qualification", "--pool", failed.name, "--pass-mark", "60%", stdout=out)

        printed = json.loads(out.getvalue())
        assert printed["pass_mark"] == 0.6 and printed["annotators"]["ana"]["status"] == "passed"
        assert api.get(NEXT, {"pool": failed.name}).json()["phase"] == "study"
        assert LogEntry.objects.get(additional_data__event="pool.pass_mark").changes == {"pass_mark": [0.8, 0.6]}

    def test_the_command_resets_and_refuses_bad_input_writing_nothing(self, annotator, second_annotator, failed):
        from django.core.management import CommandError, call_command

        for bad, message in [("0", "above 0"), ("1.5", "at most 1"), ("lots", "not a number")]:
            with pytest.raises(CommandError, match=message):
                call_command("pool_qualification", "--pool", failed.name, "--pass-mark", bad, "--reset", "ana")
        with pytest.raises(CommandError, match="bo has no training items"):
            call_command("pool_qualification", "--pool", failed.name, "--pass-mark", "0.5", "--reset", "bo")
        failed.refresh_from_db()
        assert failed.pass_mark == 0.8  # the refused reset took the pass mark back with it

        out = io.StringIO()
        call_command("pool_qualification", "--pool", failed.name, "--reset", "ana", stdout=out)

        assert json.loads(out.getvalue())["annotators"]["ana"]["status"] == "in_progress"

    def test_the_pool_page_resets_for_researchers_only_with_csrf(
        self, client, csrf_client, researcher, annotator, failed
    ):
        url = f"/pools/{failed.name}/qualification/"
        client.force_login(annotator)
        assert client.post(url, {"reset": "ana"}).status_code == 403
        csrf_client.force_login(researcher)
        assert csrf_client.post(url, {"reset": "ana"}).status_code == 403  # no CSRF token
        assert qualification_status(pool=failed, annotator=annotator)["status"] == "failed"
        client.force_login(researcher)
        page = client.get(f"/pools/{failed.name}/").content.decode()
        assert 'name="reset" value="ana"' in page and 'name="pass_mark"' in page

        response = client.post(url, {"reset": "ana"}, follow=True)

        assert response.status_code == 200 and "ana has a new training round" in response.content.decode()
        assert qualification_status(pool=failed, annotator=annotator)["status"] == "in_progress"

    def test_the_pool_page_changes_the_pass_mark_and_names_a_bad_one(self, client, researcher, failed):
        client.force_login(researcher)
        url = f"/pools/{failed.name}/qualification/"

        refused = client.post(url, {"pass_mark": "120%"}, follow=True).content.decode()
        client.post(url, {"pass_mark": "0.6"})

        assert "Not changed: the pass mark &#x27;120%&#x27; must be above 0 and at most 1" in refused
        failed.refresh_from_db()
        assert failed.pass_mark == 0.6
