"""The judge API (researchers only), the origin column of every export, the adjudicators' badges, and blinding:
nothing an annotator can load shows a judge's label, score or run."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.models import Assignment
from tests.factories import AnnotationFactory
from tests.judging.conftest import finished_run

pytestmark = pytest.mark.django_db

SCORES = {"correct": -0.123456, "misgendering": -2.654321, "no_pronoun": -3.5}


@pytest.fixture
def run(judge, judged_pool):
    pool, items = judged_pool
    return finished_run(judge=judge, pool=pool, labels={item: ("misgendering", 0.8765, SCORES) for item in items})


def test_it_lists_a_pools_runs_for_researchers(api, researcher, run):
    api.force_authenticate(researcher)
    response = api.get(f"/api/pools/{run.pool.name}/judges/")
    assert response.status_code == 200
    (row,) = response.json()
    assert {key: row[key] for key in ("id", "judge", "version", "mode", "state")} == {
        "id": run.pk, "judge": "smol-judge", "version": 1, "mode": "likelihood", "state": "done",
    }  # fmt: skip
    assert row["origin"] == "judge:smol-judge" and row["labels"] == 5


def test_it_exports_one_row_per_item_as_csv_and_jsonl(api, researcher, run, judged_pool):
    _, items = judged_pool
    api.force_authenticate(researcher)
    response = api.get(f"/api/pools/{run.pool.name}/judges/{run.pk}/labels/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["item"] for row in rows] == [item.public_id for item in items]
    first = rows[0]
    assert first["label"] == "misgendering" and float(first["confidence"]) == pytest.approx(0.8765)
    assert json.loads(first["options"]) == {"correct": " correct", "misgendering": " misgendering",
                                            "no_pronoun": " no pronoun"}  # fmt: skip
    assert float(first["score_misgendering"]) == pytest.approx(-2.654321)
    assert first["origin"] == "judge:smol-judge" and first["prompt"].endswith("Answer:")
    assert "Xe smiled at the crowd" in first["prompt"]
    lines = api.get(f"/api/pools/{run.pool.name}/judges/{run.pk}/labels/?format=jsonl").content.decode().splitlines()
    record = json.loads(lines[0])
    assert len(lines) == 5 and record["score_correct"] == pytest.approx(-0.123456)
    assert list(record["options"]) == ["correct", "misgendering", "no_pronoun"]


def test_a_run_of_another_pool_or_an_unknown_format_is_refused(api, researcher, run):
    from tests.factories import PoolFactory

    api.force_authenticate(researcher)
    other = PoolFactory(name="other")
    assert api.get(f"/api/pools/{other.name}/judges/{run.pk}/labels/").status_code == 404
    assert api.get(f"/api/pools/{run.pool.name}/judges/{run.pk + 999}/labels/").status_code == 404
    assert api.get(f"/api/pools/{run.pool.name}/judges/{run.pk}/labels/?format=xml").status_code == 404
    assert api.get("/api/pools/nope/judges/").status_code == 404


def test_annotators_cannot_reach_judge_runs(api, annotator, run):
    api.force_authenticate(annotator)
    assert api.get(f"/api/pools/{run.pool.name}/judges/").status_code == 403
    assert api.get(f"/api/pools/{run.pool.name}/judges/{run.pk}/labels/").status_code == 403


def test_no_annotator_response_shows_a_judge_label_score_or_run(client, annotator, run, judged_pool):
    pool, items = judged_pool
    for position, item in enumerate(items):
        Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=position)
    client.force_login(annotator)
    responses = [
        client.get("/api/annotate/next/"),
        client.get(f"/api/annotate/next/?pool={pool.name}"),
        client.get(f"/annotate/{pool.name}/"),
        client.get("/annotate/"),
        *(client.get(f"/api/annotate/items/{item.public_id}/") for item in items),
    ]
    assert all(response.status_code == 200 for response in responses)
    forbidden = ["smol-judge", "judge:", "0.8765", "-2.654321", "-0.123456", "Answer:"]
    for response in responses:
        text = response.content.decode()
        for secret in forbidden:
            assert secret not in text, (response.request["PATH_INFO"], secret)
        if response["Content-Type"].startswith("application/json"):
            body = json.loads(text)
            assert "judge" not in json.dumps(body).lower()


def test_the_raw_export_says_which_kind_of_rater_each_label_came_from(api, researcher, annotator, run, judged_pool):
    pool, items = judged_pool
    AnnotationFactory(item=items[0], annotator=annotator, label="correct")
    api.force_authenticate(researcher)
    streamed = api.get(f"/api/pools/{pool.name}/annotations/?format=csv").streaming_content
    rows = list(csv.DictReader(io.StringIO(b"".join(streamed).decode())))
    human = [row for row in rows if row["origin"] == "human"]
    machine = [row for row in rows if row["origin"] == "judge:smol-judge"]
    assert len(human) == 1 and human[0]["annotator"] == annotator.username
    assert len(machine) == 5 and {row["label"] for row in machine} == {"misgendering"}
    assert {row["item_id"] for row in machine} == {item.public_id for item in items}


def test_adjudicators_see_the_heuristic_and_the_judge_with_badges(client, researcher, annotator, second_annotator, run,
                                                                  judged_pool):  # fmt: skip
    pool, items = judged_pool
    AnnotationFactory(item=items[1], annotator=annotator, label="correct")
    AnnotationFactory(item=items[1], annotator=second_annotator, label="misgendering")
    client.force_login(researcher)
    page = client.get(f"/pools/{pool.name}/adjudicate/").content.decode()
    assert 'data-origin="heuristic"' in page and 'data-origin="judge:smol-judge"' in page
    assert "0.88" in page  # the judge's confidence, rounded


def test_inside_run_labels_read_once_a_runs_labels_are_read_once_and_answer_any_items(
    run, judged_pool, django_assert_num_queries
):
    from judging.selectors import run_labels_read_once, run_pool_labels

    pool, items = judged_pool
    plain = run_pool_labels(run=run, pool=pool)
    some = [items[2].pk, items[0].pk]
    with run_labels_read_once():
        with django_assert_num_queries(1):
            first = run_pool_labels(run=run, pool=pool)
            again = run_pool_labels(run=run, pool=pool)
            chosen = run_pool_labels(run=run, pool=pool, item_ids=some)
    assert first == again == plain and len(plain) == len(items)
    assert chosen == run_pool_labels(run=run, pool=pool, item_ids=some) == [row for row in plain if row.item_id in some]
    with django_assert_num_queries(1):  # outside it, every call reads
        run_pool_labels(run=run, pool=pool)
