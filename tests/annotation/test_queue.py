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
