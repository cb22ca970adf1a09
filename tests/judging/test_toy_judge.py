"""The judge section shows why a 135M judge is a toy: its verdicts over the pool's items, and a
plain sentence when it is the demo's small model or gives one label to every item."""

from __future__ import annotations

import pytest

from analysis.selectors.judges import judge_label_counts
from tests.factories import AnnotationFactory
from tests.judging.conftest import finished_run

SCORES = {"correct": -2.0, "misgendering": -1.6, "no_pronoun": -2.4}  # mean log-probabilities per option


@pytest.mark.django_db
def test_a_judge_that_says_misgendering_to_everything_is_shown_as_the_toy_it_is(
    client, researcher, annotator, judge, judged_pool
):
    pool, items = judged_pool
    for item in items:
        AnnotationFactory(item=item, annotator=annotator, label="correct")
    finished_run(judge=judge, pool=pool, labels={item: ("misgendering", 0.4, SCORES) for item in items})

    [row] = judge_label_counts(pool=pool)
    assert row["verdicts"] == {"correct": 0, "misgendering": 5, "no_pronoun": 0}
    assert (row["one_label"], row["toy"], row["n"]) == ("misgendering", True, 5)

    client.force_login(researcher)
    page = client.get(f"/reports/{pool.name}/?wait=1").content.decode()
    section = page[page.index('id="judges"') :]
    assert "is a toy judge." in section
    assert "gave every one of the 5 items the label “misgendering”" in section
    assert '<th scope="col" class="num">no pronoun</th>' in section
