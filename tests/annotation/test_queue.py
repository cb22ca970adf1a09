"""The annotator's place in their queue, checked against a plain Python walk of the same queue.

The API computes position, total, done and the neighbours in SQL; here random queues (two pools, gaps in the
positions, another annotator's work beside them, a random part already annotated) are walked in Python instead.
"""

import random

import pytest

from annotation.models import Annotation, Assignment
from tests.factories import PoolFactory, PoolItemFactory

NEXT = "/api/annotate/next/"


def build_queue(rng: random.Random, annotator, other):
    """Two pools; returns the annotator's queue as [(pool, position, item)] in queue order."""
    queue = []
    for pool in sorted([PoolFactory(), PoolFactory()], key=lambda pool: pool.pk):
        positions = sorted(rng.sample(range(40), rng.randint(3, 12)))  # gaps, as after items were removed
        for position in positions:
            item = PoolItemFactory(pool=pool)
            Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=position)
            queue.append((pool, position, item))
            if rng.random() < 0.5:  # the same item in someone else's queue, annotated by them
                Assignment.objects.create(pool=pool, item=item, annotator=other, position=position)
                Annotation.objects.create(item=item, annotator=other, label="misgendering")
    queue.sort(key=lambda row: (row[0].pk, row[1]))
    for _, _, item in queue:
        if rng.random() < 0.4:
            Annotation.objects.create(item=item, annotator=annotator, label="correct")
    return queue


def expected(queue, annotated, index):
    """What the API should say about queue[index], computed by walking the list."""
    _, _, item = queue[index]
    return {
        "item": item.public_id,
        "position": index + 1,
        "total": len(queue),
        "done": sum(row[2].pk in annotated for row in queue),
        "previous": queue[index - 1][2].public_id if index > 0 else None,
        "next": queue[index + 1][2].public_id if index + 1 < len(queue) else None,
    }


def place(body):
    return {key: body[key] for key in ("item", "position", "total", "done", "previous", "next")}


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(4))
def test_it_places_every_item_as_a_walk_of_the_queue_does(api, annotator, second_annotator, seed):
    rng = random.Random(seed)
    queue = build_queue(rng, annotator, second_annotator)
    annotated = set(Annotation.objects.filter(annotator=annotator).values_list("item_id", flat=True))
    api.force_authenticate(annotator)

    # Next: the first item in queue order that this annotator has not annotated.
    first_open = next((i for i, row in enumerate(queue) if row[2].pk not in annotated), None)
    response = api.get(NEXT)
    if first_open is None:
        assert response.status_code == 204
    else:
        assert place(response.json()) == expected(queue, annotated, first_open)

    # Going back and forth: every item, wherever it is.
    for index, (_, _, item) in enumerate(queue):
        body = api.get(f"/api/annotate/items/{item.public_id}/").json()
        assert place(body) == expected(queue, annotated, index)
        assert (body["annotation"] is not None) == (item.pk in annotated)

    # Limited to one pool: the same walk over that pool's part of the queue only.
    pool = queue[-1][0]
    part = [row for row in queue if row[0] == pool]
    open_in_part = next((i for i, row in enumerate(part) if row[2].pk not in annotated), None)
    response = api.get(NEXT, {"pool": pool.name})
    if open_in_part is None:
        assert response.status_code == 204
    else:
        assert place(response.json()) == expected(part, annotated, open_in_part)


@pytest.mark.django_db
class TestAnnotatedFlag:
    """`Assignment.annotated` is kept by database triggers, so it holds whoever writes the annotations."""

    def flags(self, *assignments):
        return [Assignment.objects.get(pk=assignment.pk).annotated for assignment in assignments]

    def test_it_follows_annotations_as_they_are_created_and_deleted(self, annotator, second_annotator):
        item = PoolItemFactory()
        mine = Assignment.objects.create(pool=item.pool, item=item, annotator=annotator, position=1)
        theirs = Assignment.objects.create(pool=item.pool, item=item, annotator=second_annotator, position=1)
        assert self.flags(mine, theirs) == [False, False]

        annotation = Annotation.objects.create(item=item, annotator=annotator, label="correct")
        assert self.flags(mine, theirs) == [True, False]  # only the annotator's own assignment

        annotation.label = "misgendering"
        annotation.save()
        assert self.flags(mine, theirs) == [True, False]

        annotation.delete()
        assert self.flags(mine, theirs) == [False, False]

    def test_it_starts_true_for_an_assignment_made_after_the_annotation(self, annotator):
        item = PoolItemFactory()
        Annotation.objects.create(item=item, annotator=annotator, label="correct")
        assignment = Assignment.objects.create(
            pool=item.pool, item=item, annotated=False, annotator=annotator, position=3
        )
        assert self.flags(assignment) == [True]

    def test_it_moves_with_an_annotation_given_to_another_item(self, annotator):
        first, second = PoolItemFactory(), PoolItemFactory()
        a = Assignment.objects.create(pool=first.pool, item=first, annotator=annotator, position=1)
        b = Assignment.objects.create(pool=second.pool, item=second, annotator=annotator, position=1)
        annotation = Annotation.objects.create(item=first, annotator=annotator, label="correct")

        Annotation.objects.filter(pk=annotation.pk).update(item=second)
        assert self.flags(a, b) == [False, True]

    def test_next_skips_items_annotated_outside_the_api(self, api, annotator):
        pool = PoolFactory()
        items = [PoolItemFactory(pool=pool) for _ in range(3)]
        for position, item in enumerate(items, start=1):
            Assignment.objects.create(pool=pool, item=item, annotator=annotator, position=position)
        Annotation.objects.bulk_create(
            [Annotation(item=item, annotator=annotator, label="correct") for item in items[:2]]
        )
        api.force_authenticate(annotator)

        body = api.get(NEXT).json()

        assert (body["item"], body["position"], body["done"]) == (items[2].public_id, 3, 2)
