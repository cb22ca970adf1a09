"""Handing out a pool's items (docs/domain.md, 'Assignment and the annotator's queue'): every study item to one annotator and a stratified
overlap subset to `raters` different annotators; every gold item to every annotator, hidden at random among their
study items; every training item to every annotator, first in their queue. Re-runs add to the open part of each
queue and never move work that is done or in progress."""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.roles import ANNOTATOR, has_role
from annotation.models import GOLD, STUDY, TRAINING, Annotation, Assignment, Participant, Pool, PoolItem
from annotation.services.stamp import pool_changed
from common.audit import audit_record
from common.errors import ServiceError

DEFAULT_RATERS = 2


class AssignmentError(ServiceError, ValueError):
    """The assignment cannot be made as asked; nothing was written."""


@dataclass
class AssignResult:
    created: int = 0
    overlap_items: int = 0  # study items with two or more annotators
    per_annotator: dict[str, int] = field(default_factory=dict)  # total assignments in the pool after the run
    raters: int = DEFAULT_RATERS
    gold_items: int = 0
    training_items: int = 0
    reordered: int = 0  # open assignments laid out again to make room for the new ones


@dataclass(frozen=True)
class _Row:
    """An existing assignment, as read under its row lock."""

    pk: int
    item_id: int
    position: int
    annotated: bool


@dataclass
class _PoolState:
    """What the run starts from: the pool's items by kind, who holds what, and each named annotator's queue."""

    cells: dict[int, tuple]  # study item id -> its cell (model, dataset, setting, pronoun)
    gold: list[int]
    training: list[int]
    holders: dict[int, set[int]]  # item id -> user ids, every annotator of the pool
    queues: dict[int, list[_Row]]  # user id -> their assignments in this pool, in position order
    annotated: set[tuple[int, int]]  # (item id, user id) pairs that already have an annotation

    def study_load(self, user_id: int) -> int:
        return sum(1 for row in self.queues[user_id] if row.item_id in self.cells)

    def kind(self, item_id: int) -> str:
        if item_id in self.cells:
            return STUDY
        return TRAINING if item_id in self._training else GOLD

    def __post_init__(self) -> None:
        self._training = set(self.training)


def _annotators(usernames: list[str]) -> dict[str, Any]:
    """The named users, in the order given; AssignmentError names any unknown one or any who is not an annotator."""
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
    # A study participant annotates their own pool's link's share alone (annotation/services/recruitment.py).
    participants = sorted(Participant.objects.filter(user__username__in=names).values_list("user__username", flat=True))
    if participants:
        raise AssignmentError(f"study participants get work through their study link only: {', '.join(participants)}")
    return {name: users[name] for name in names}


def _check_request(*, overlap: int, raters: int, annotators: int) -> None:
    if overlap < 0:
        raise AssignmentError("overlap cannot be negative")
    if raters < 2:
        raise AssignmentError("raters must be at least 2 (an overlap item is annotated by several people)")
    if overlap and annotators < 2:
        raise AssignmentError("overlap needs at least two annotators")
    if overlap and raters > annotators:
        raise AssignmentError(f"raters {raters} needs at least {raters} annotators; {annotators} named")


def _load_state(*, pool: Pool, user_ids: list[int]) -> _PoolState:
    """Read the pool under locks: the pool row (one run at a time) and the named annotators' assignments (a save
    that marks one of them annotated finishes first, so done work is seen as done)."""
    Pool.objects.select_for_update().get(pk=pool.pk)
    cells, gold, training = {}, [], []
    for item_id, kind, *cell in (
        PoolItem.objects.filter(pool=pool)
        .order_by("pk")
        .values_list("pk", "kind", "model_name", "dataset", "setting", "pronoun")
    ):
        if kind == GOLD:
            gold.append(item_id)
        elif kind == TRAINING:
            training.append(item_id)
        else:
            cells[item_id] = tuple(cell)
    holders: dict[int, set[int]] = defaultdict(set)
    for item_id, user_id in Assignment.objects.filter(pool=pool).values_list("item_id", "annotator_id"):
        holders[item_id].add(user_id)
    queues: dict[int, list[_Row]] = {user_id: [] for user_id in user_ids}
    locked = (
        Assignment.objects.select_for_update()
        .filter(pool=pool, annotator_id__in=user_ids)
        .order_by("annotator_id", "position")
        .values_list("pk", "annotator_id", "item_id", "position", "annotated")
    )
    for pk, user_id, item_id, position, is_annotated in locked:
        queues[user_id].append(_Row(pk=pk, item_id=item_id, position=position, annotated=is_annotated))
    annotated = set(
        Annotation.objects.filter(item__pool=pool, annotator_id__in=user_ids).values_list("item_id", "annotator_id")
    )
    return _PoolState(cells=cells, gold=gold, training=training, holders=holders, queues=queues, annotated=annotated)


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


def _overlap_items(*, state: _PoolState, overlap: int, rng: random.Random) -> set[int]:
    """The study items with several annotators after the run: those that already have two or more, and as many more
    (stratified over the cells) as `overlap` asks for."""
    shared = {item_id for item_id in state.cells if len(state.holders[item_id]) >= 2}
    candidates: dict[tuple, list[int]] = defaultdict(list)
    for item_id, cell in state.cells.items():
        if item_id not in shared:
            candidates[cell].append(item_id)
    return shared | set(_stratified(candidates, max(0, overlap - len(shared)), rng))


def _distribute_study(
    *, state: _PoolState, user_ids: list[int], overlap_ids: set[int], raters: int, rng: random.Random
) -> dict[int, list[int]]:
    """New study items per annotator: each item gets the holders it lacks (`raters` for an overlap item, else one)
    from the least-loaded annotators who do not hold it yet, ties broken at random.

    Items that lack the most holders go first: giving an item's k holders to the k least-loaded annotators at once
    keeps workloads within one item of each other, and doing so while loads are level leaves k different people free.
    """
    missing = {
        item_id: max(0, (raters if item_id in overlap_ids else 1) - len(state.holders[item_id]))
        for item_id in state.cells
    }
    order = [item_id for item_id in state.cells if missing[item_id]]
    rng.shuffle(order)
    order.sort(key=lambda item_id: -missing[item_id])
    heap = [(state.study_load(user_id), rng.random(), user_id) for user_id in user_ids]
    heapq.heapify(heap)
    new: dict[int, list[int]] = defaultdict(list)
    for item_id in order:
        chosen: list[tuple[int, float, int]] = []
        skipped: list[tuple[int, float, int]] = []
        while len(chosen) < missing[item_id] and heap:
            entry = heapq.heappop(heap)
            (skipped if entry[2] in state.holders[item_id] else chosen).append(entry)
        if len(chosen) < missing[item_id]:
            raise AssignmentError(f"not enough annotators to give an overlap item {raters} different people")
        for load, _, user_id in chosen:
            state.holders[item_id].add(user_id)
            new[user_id].append(item_id)
            heapq.heappush(heap, (load + 1, rng.random(), user_id))
        for entry in skipped:
            heapq.heappush(heap, entry)
    return new


def _merged(old: list, new: list, rng: random.Random) -> list:
    """`new` spread uniformly at random among `old`, whose own order is kept."""
    total = len(old) + len(new)
    old_places = set(rng.sample(range(total), len(old)))
    old_iter, new_iter = iter(old), iter(new)
    return [next(old_iter) if place in old_places else next(new_iter) for place in range(total)]


def _lay_out(
    *, rows: list[_Row], new_items: list[int], state: _PoolState, rng: random.Random
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """One annotator's queue after the run: (new position by moved assignment pk, [(item id, position)] to create).

    Done work (annotated) and the item in progress (the first open one) keep their places. The rest of the open
    part and the new items share the free places: training items first (the qualification round), then the others
    with the new ones spread at random among them (docs/domain.md, 'Assignment and the annotator's queue').
    """
    first_open = next((i for i, row in enumerate(rows) if not row.annotated), None)
    movable = [row for i, row in enumerate(rows) if not row.annotated and first_open is not None and i > first_open]
    new_training = [item_id for item_id in new_items if state.kind(item_id) == TRAINING]
    new_other = [item_id for item_id in new_items if state.kind(item_id) != TRAINING]
    rng.shuffle(new_training)
    rng.shuffle(new_other)
    old_training = [row for row in movable if state.kind(row.item_id) == TRAINING]
    old_other = [row for row in movable if state.kind(row.item_id) != TRAINING]
    sequence = old_training + new_training + _merged(old_other, new_other, rng)
    end = max((row.position for row in rows), default=-1) + 1
    slots = sorted([row.position for row in movable] + list(range(end, end + len(new_items))))
    moves: dict[int, int] = {}
    creates: list[tuple[int, int]] = []
    for entry, slot in zip(sequence, slots, strict=True):
        if isinstance(entry, _Row):
            if entry.position != slot:
                moves[entry.pk] = slot
        else:
            creates.append((entry, slot))
    return moves, creates


def _write(*, pool: Pool, layouts: dict[int, tuple[dict[int, int], list[tuple[int, int]]]], state: _PoolState) -> int:
    """Move the open assignments and create the new ones; returns the number created.

    Moved rows first go past every position in use, then to their places, so that the unique (pool, annotator,
    position) constraint holds after every row of each statement.
    """
    moved = [(pk, slot) for moves, _ in layouts.values() for pk, slot in moves.items()]
    if moved:
        top = 1 + max(
            [slot for _, slot in moved]
            + [position for _, creates in layouts.values() for _, position in creates]
            + [row.position for rows in state.queues.values() for row in rows]
        )
        parked = [Assignment(pk=pk, position=top + i) for i, (pk, _) in enumerate(moved)]
        Assignment.objects.bulk_update(parked, ["position"], batch_size=500)
        Assignment.objects.bulk_update(
            [Assignment(pk=pk, position=slot) for pk, slot in moved], ["position"], batch_size=500
        )
    rows = [
        Assignment(
            pool=pool,
            item_id=item_id,
            annotator_id=user_id,
            position=position,
            annotated=(item_id, user_id) in state.annotated,
        )
        for user_id, (_, creates) in layouts.items()
        for item_id, position in creates
    ]
    Assignment.objects.bulk_create(rows, batch_size=2000)
    pool_changed(pools=[pool])
    return len(rows)


def assignments_create(
    *, pool: Pool, usernames: list[str], overlap: int = 0, raters: int = DEFAULT_RATERS, seed: int = 0, user=None
) -> AssignResult:
    """Give every unassigned study item to one annotator, make sure `overlap` study items in all have `raters`
    different annotators, and give every annotator each gold and training item they lack.

    Safe to re-run: it never moves done work or the item in progress, and it can raise the overlap and the raters.
    The draw is a pure function of the seed, the pool and what is already assigned.
    """
    users = _annotators(usernames)
    _check_request(overlap=overlap, raters=raters, annotators=len(users))
    user_ids = [user.pk for user in users.values()]
    rng = random.Random(f"{seed}:{pool.name}")
    with transaction.atomic():
        state = _load_state(pool=pool, user_ids=user_ids)
        if overlap > len(state.cells):
            raise AssignmentError(f"overlap {overlap} is larger than the pool's {len(state.cells)} items to share out")
        overlap_ids = _overlap_items(state=state, overlap=overlap, rng=rng)
        new = _distribute_study(state=state, user_ids=user_ids, overlap_ids=overlap_ids, raters=raters, rng=rng)
        layouts = {}
        for user_id in user_ids:
            held = {row.item_id for row in state.queues[user_id]}
            shared = [item_id for item_id in state.training + state.gold if item_id not in held]
            layouts[user_id] = _lay_out(
                rows=state.queues[user_id], new_items=new[user_id] + shared, state=state, rng=rng
            )
        created = _write(pool=pool, layouts=layouts, state=state)
        audit_record(
            event="pool.assign",
            obj=pool,
            actor=user,
            data={
                "annotators": sorted(users),
                "overlap": overlap,
                "raters": raters,
                "seed": seed,
                "created": created,
            },
        )

    totals = {user_id: len(state.queues[user_id]) + len(layouts[user_id][1]) for user_id in user_ids}
    by_pk = {user.pk: name for name, user in users.items()}
    return AssignResult(
        created=created,
        overlap_items=sum(1 for item_id in state.cells if len(state.holders[item_id]) >= 2),
        per_annotator={by_pk[user_id]: count for user_id, count in totals.items()},
        raters=raters,
        gold_items=len(state.gold),
        training_items=len(state.training),
        reordered=sum(len(moves) for moves, _ in layouts.values()),
    )
