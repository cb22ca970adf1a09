"""Handing out a pool's items: one annotator each, a stratified overlap subset to two (DOMAIN section 5)."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max

from accounts.roles import ANNOTATOR, has_role
from annotation.models import Assignment, Pool, PoolItem


class AssignmentError(ValueError):
    """The assignment cannot be made as asked; nothing was written."""


@dataclass
class AssignResult:
    created: int = 0
    overlap_items: int = 0
    per_annotator: dict[str, int] = field(default_factory=dict)  # total assignments in the pool after the run


def _stratified(items_by_cell: dict[tuple, list[int]], count: int, rng: random.Random) -> list[int]:
    """Round-robin over the cells in a random order, so that the overlap spreads over every cell."""
    queues = {cell: rng.sample(ids, len(ids)) for cell, ids in sorted(items_by_cell.items())}
    cells = rng.sample(sorted(queues), len(queues))
    picked: list[int] = []
    while len(picked) < count:
        progressed = False
        for cell in cells:
            if queues[cell] and len(picked) < count:
                picked.append(queues[cell].pop())
                progressed = True
        if not progressed:
            break
    return picked


def assignments_create(*, pool: Pool, usernames: list[str], overlap: int = 0, seed: int = 0) -> AssignResult:
    """Give every unassigned item to one annotator and make sure `overlap` items in all have two.

    Work already handed out is never moved or reordered: new assignments are appended after each annotator's last
    position, in a random order of their own. Each unit of work goes to the least-loaded annotator who does not
    already hold the item (ties broken at random), which keeps workloads within one item of each other.
    """
    names = list(dict.fromkeys(name.strip() for name in usernames if name.strip()))
    if not names:
        raise AssignmentError("name at least one annotator")
    users = {user.username: user for user in get_user_model().objects.filter(username__in=names)}
    unknown = [name for name in names if name not in users]
    if unknown:
        raise AssignmentError(f"no such user: {', '.join(unknown)}")
    not_annotators = [name for name in names if not has_role(users[name], ANNOTATOR)]
    if not_annotators:
        raise AssignmentError(f"not annotators: {', '.join(not_annotators)}")
    if overlap < 0:
        raise AssignmentError("overlap cannot be negative")
    if overlap and len(names) < 2:
        raise AssignmentError("overlap needs at least two annotators")

    rng = random.Random(f"{seed}:{pool.name}")
    with transaction.atomic():
        Pool.objects.select_for_update().get(pk=pool.pk)
        items = list(
            PoolItem.objects.filter(pool=pool)
            .order_by("pk")
            .values_list("pk", "model_name", "dataset", "setting", "pronoun")
        )
        if overlap > len(items):
            raise AssignmentError(f"overlap {overlap} is larger than the pool's {len(items)} items")
        holders: dict[int, set[int]] = defaultdict(set)
        for item_id, user_id in Assignment.objects.filter(pool=pool).values_list("item_id", "annotator_id"):
            holders[item_id].add(user_id)
        load = {user.pk: Assignment.objects.filter(pool=pool, annotator=user).count() for user in users.values()}

        doubled = sum(1 for ids in holders.values() if len(ids) >= 2)
        candidates: dict[tuple, list[int]] = defaultdict(list)
        for item_id, *cell in items:
            if len(holders[item_id]) < 2:
                candidates[tuple(cell)].append(item_id)
        overlap_ids = set(_stratified(candidates, max(0, overlap - doubled), rng))

        # Units of work: one per missing holder.
        missing: dict[int, int] = {}
        for item_id, *_ in items:
            wanted = 2 if item_id in overlap_ids else 1
            missing[item_id] = max(0, wanted - len(holders[item_id]))
        units = [item_id for item_id, count in missing.items() for _ in range(count)]
        rng.shuffle(units)
        # Items that still need two holders go first: handing them out while loads are level leaves a second,
        # different annotator free for each, and the single units that follow even the loads out.
        units.sort(key=lambda item_id: -missing[item_id])

        new: dict[int, list[int]] = defaultdict(list)
        for item_id in units:
            eligible = [pk for pk in load if pk not in holders[item_id]]
            if not eligible:
                raise AssignmentError("not enough annotators to give an overlap item two different people")
            least = min(load[pk] for pk in eligible)
            chosen = rng.choice(sorted(pk for pk in eligible if load[pk] == least))
            holders[item_id].add(chosen)
            load[chosen] += 1
            new[chosen].append(item_id)

        rows = []
        for user_id, item_ids in new.items():
            last = Assignment.objects.filter(pool=pool, annotator_id=user_id).aggregate(last=Max("position"))["last"]
            start = 0 if last is None else last + 1
            rng.shuffle(item_ids)
            rows.extend(
                Assignment(pool=pool, item_id=item_id, annotator_id=user_id, position=start + offset)
                for offset, item_id in enumerate(item_ids)
            )
        Assignment.objects.bulk_create(rows)

    by_pk = {user.pk: name for name, user in users.items()}
    return AssignResult(
        created=len(rows),
        overlap_items=sum(1 for ids in holders.values() if len(ids) >= 2),
        per_annotator={by_pk[pk]: count for pk, count in load.items()},
    )
