"""Recruiting annotators on a crowd platform (docs/domain.md, "Recruiting on a crowd platform"; docs/guide-researcher.md,
"Recruiting on Prolific").

A pool's study link lets anyone with a platform participant id in: the first visit makes them a pseudonymous
annotator of that pool alone and gives them the training round, the gold items and `items_per_person` study items by
the pool's overlap rule (annotation/services/assignment.py); a later visit with the same id resumes. The study items
still open in the queue of a participant idle for `timeout_minutes` go back to the queue (their saved labels stay).
After their study items a participant is shown the completion code; one who fails the training round gets the
screened code (or is told there is none). The platform's ids are stored on `Participant` only: the audit trail, the
logs and every export but `export_participants` name the account's pseudonym.
"""

from __future__ import annotations

import random
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.db.models import Max, Q
from django.urls import reverse
from django.utils import timezone

from accounts.roles import ANNOTATOR
from accounts.services import roles_ensure
from annotation.models import (
    PROLIFIC,
    STUDY,
    Assignment,
    Participant,
    Pool,
    PoolItem,
    Recruitment,
    new_study_token,
)
from annotation.selectors import FAILED, qualification_status
from annotation.services.assignment import _lay_out, _load_state, _stratified, _write
from annotation.services.stamp import pool_changed
from common.audit import CREATE, UPDATE, audit_record
from common.errors import ServiceError

PLATFORMS = (PROLIFIC,)
DEFAULT_TIMEOUT_MINUTES = 60
# Prolific's participant, study and session ids are 24 hex characters; any platform's word characters up to 64 pass.
PARTICIPANT_ID = re.compile(r"\A\w{1,64}\Z", re.ASCII)
CODE = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
# What Prolific puts into a study's URL (its "URL parameters" option): each placeholder becomes the participant's value.
PROLIFIC_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc="


class RecruitmentError(ServiceError, ValueError):
    """The recruitment cannot be opened or changed as asked; nothing was written."""


class StudyRefused(Exception):
    """A visit of a study link that cannot go on: `reason` is `bad_id`, `closed`, `full` or `no_items`."""

    def __init__(self, reason: str, message: str):
        self.reason = reason
        super().__init__(message)


def _code(value: str, flag: str) -> str:
    value = value.strip()
    if not CODE.match(value):
        raise RecruitmentError(f"{flag} {value!r} must be 1 to 64 letters, digits, - or _")
    return value


def _overlap_items(*, pool: Pool, overlap: int) -> list[int]:
    """The study items that get `raters` people: those already held by two or more, and as many more as `overlap`
    asks, stratified over the cells as `assign` picks them; drawn once when the overlap is set."""
    state = _load_state(pool=pool, user_ids=[])
    if overlap > len(state.cells):
        raise RecruitmentError(f"--overlap {overlap} is larger than the pool's {len(state.cells)} study items")
    shared = sorted(item_id for item_id in state.cells if len(state.holders[item_id]) >= 2)
    candidates: dict[tuple, list[int]] = {}
    for item_id, cell in state.cells.items():
        if item_id not in shared:
            candidates.setdefault(cell, []).append(item_id)
    rng = random.Random(f"recruit:{pool.name}:{overlap}")
    return shared[:overlap] + sorted(_stratified(candidates, max(0, overlap - len(shared)), rng))


# What the audit trail records of a recruitment's settings (never the link's secret, nor the codes people are paid for).
AUDITED = ("is_open", "items_per_person", "max_people", "timeout_minutes", "overlap", "raters")


def _check_numbers(numbers: dict[str, int | None]) -> None:
    for name, value in numbers.items():
        least = {"overlap": 0, "raters": 2}.get(name, 1)
        if value is not None and value < least:
            raise RecruitmentError(f"--{name.replace('_', '-')} must be at least {least} (got {value})")


def _codes_set(recruitment: Recruitment, *, completion_code: str | None, screened_code: str | None) -> None:
    if completion_code is not None:
        recruitment.completion_code = _code(completion_code, "--completion-code")
    if screened_code is not None:
        recruitment.screened_code = _code(screened_code, "--screened-code") if screened_code.strip() else ""
    if recruitment.screened_code and recruitment.screened_code == recruitment.completion_code:
        raise RecruitmentError("--screened-code must differ from --completion-code")


@transaction.atomic
def recruitment_open(
    *,
    pool: Pool,
    platform: str = PROLIFIC,
    items_per_person: int | None = None,
    completion_code: str | None = None,
    screened_code: str | None = None,
    max_people: int | None = None,
    timeout_minutes: int | None = None,
    overlap: int | None = None,
    raters: int | None = None,
    rotate: bool = False,
    user=None,
) -> Recruitment:
    """Open the pool's recruitment, or update and reopen it: values left None keep what it had (a new one needs
    `items_per_person` and `completion_code`). `rotate` gives the link a new token: the old link stops working."""
    if platform not in PLATFORMS:
        raise RecruitmentError(f"unknown platform {platform!r}: choose {', '.join(PLATFORMS)}")
    numbers = {
        "items_per_person": items_per_person,
        "max_people": max_people,
        "timeout_minutes": timeout_minutes,
        "raters": raters,
    }
    _check_numbers({**numbers, "overlap": overlap})
    Pool.objects.select_for_update().get(pk=pool.pk)
    recruitment = Recruitment.objects.select_for_update().filter(pool=pool).first()
    created = recruitment is None
    if recruitment is None:
        if items_per_person is None or completion_code is None:
            raise RecruitmentError("a new recruitment needs --items-per-person and --completion-code")
        recruitment = Recruitment(pool=pool, items_per_person=items_per_person, is_open=False, created_by=user)
    before = {name: None if created else getattr(recruitment, name) for name in AUDITED}
    recruitment.platform = platform
    for name, value in numbers.items():
        if value is not None:
            setattr(recruitment, name, value)
    _codes_set(recruitment, completion_code=completion_code, screened_code=screened_code)
    study_items = PoolItem.objects.filter(pool=pool, kind=STUDY).count()
    if recruitment.items_per_person > study_items:
        raise RecruitmentError(
            f"--items-per-person {recruitment.items_per_person} is more than the pool's {study_items} study items"
        )
    if overlap is not None and (created or overlap != recruitment.overlap):
        recruitment.overlap_items = _overlap_items(pool=pool, overlap=overlap)
        recruitment.overlap = overlap
    if rotate and not created:
        recruitment.token = new_study_token()
    recruitment.is_open = True
    recruitment.save()
    audit_record(
        event="pool.recruit",
        obj=pool,
        actor=user,
        action=CREATE if created else UPDATE,
        changes={
            name: [before[name], getattr(recruitment, name)]
            for name in AUDITED
            if before[name] != getattr(recruitment, name)
        },
        data={"platform": platform, "link_rotated": bool(rotate and not created)},
    )
    return recruitment


@transaction.atomic
def recruitment_close(*, pool: Pool, user=None) -> Recruitment:
    """Close the pool's recruitment: its link lets nobody new in; participants already in may finish."""
    recruitment = Recruitment.objects.select_for_update().filter(pool=pool).first()
    if recruitment is None:
        raise RecruitmentError(f"pool {pool.name!r} has no recruitment to close")
    if recruitment.is_open:
        recruitment.is_open = False
        recruitment.save(update_fields=["is_open", "updated_at"])
        audit_record(event="pool.recruit_close", obj=pool, actor=user, changes={"is_open": [True, False]})
    return recruitment


def study_path(recruitment: Recruitment) -> str:
    """The study link's path and query, with the platform's placeholders (the host is the caller's)."""
    return f"{reverse('annotation:study-join', kwargs={'token': recruitment.token})}?{PROLIFIC_PARAMETERS}"


def completion_url(code: str) -> str:
    return PROLIFIC_COMPLETE + code


# Participants ----------------------------------------------------------------------------------------------------------


def _pseudonym(platform: str) -> str:
    """A new participant's username: random, so it says nothing about the platform's ids."""
    user_model = get_user_model()
    while True:
        name = f"{platform}-{secrets.token_hex(5)}"
        if not user_model.objects.filter(username=name).exists():
            return name


def _release_idle(*, recruitment: Recruitment, now) -> int:
    """Give back the open study items of the participants idle for the recruitment's timeout (no visit and no save
    since); their annotations stay. Returns how many assignments went back to the queue."""
    cutoff = now - timedelta(minutes=recruitment.timeout_minutes)
    idle = [
        participant
        for participant in Participant.objects.filter(
            recruitment=recruitment, finished_at__isnull=True, last_seen_at__lt=cutoff
        )
        .annotate(
            last_saved=Max(
                "user__annotations__updated_at", filter=Q(user__annotations__item__pool_id=recruitment.pool_id)
            )
        )
        .select_related("user")
        if participant.last_saved is None or participant.last_saved < cutoff
    ]
    if not idle:
        return 0
    released, _ = Assignment.objects.filter(
        pool_id=recruitment.pool_id,
        annotator_id__in=[participant.user_id for participant in idle],
        annotated=False,
        item__kind=STUDY,
    ).delete()
    if released:
        pool_changed(pools=[recruitment.pool_id])
        audit_record(
            event="pool.participants_idle",
            obj=recruitment.pool,
            data={
                "annotators": sorted(participant.user.get_username() for participant in idle),
                "released": released,
                "timeout_minutes": recruitment.timeout_minutes,
            },
        )
    return released


def _top_up(*, recruitment: Recruitment, participant: Participant) -> int:
    """Give the participant the training and gold items they lack and as many study items as they are short of
    `items_per_person` (their annotated and open ones count), by the pool's overlap rule: items that lack the most
    holders first (`raters` for an overlap item, one for the others), ties at random. Returns the study items given."""
    pool = recruitment.pool
    user_id = participant.user_id
    state = _load_state(pool=pool, user_ids=[user_id])
    held = {row.item_id for row in state.queues[user_id]}
    short = max(0, recruitment.items_per_person - sum(1 for item_id in held if item_id in state.cells))
    overlap = set(recruitment.overlap_items)
    rng = random.Random(f"{pool.name}:{user_id}:{len(held)}")
    missing = {
        item_id: (recruitment.raters if item_id in overlap else 1) - len(state.holders[item_id])
        for item_id in state.cells
        if item_id not in held
    }
    candidates = [item_id for item_id, lacking in missing.items() if lacking > 0]
    rng.shuffle(candidates)
    candidates.sort(key=lambda item_id: -missing[item_id])
    study = candidates[:short]
    shared = [item_id for item_id in state.training + state.gold if item_id not in held]
    if not study and not shared:
        return 0
    layout = _lay_out(rows=state.queues[user_id], new_items=study + shared, state=state, rng=rng)
    _write(pool=pool, layouts={user_id: layout}, state=state)
    return len(study)


@dataclass
class Visit:
    """What a visit of the study link or the finish page leads to."""

    participant: Participant
    created: bool = False
    finished: bool = False


def participant_join(*, token: str, participant_id: str, study_id: str = "", session_id: str = "") -> Visit:
    """A visit of the study link: the participant of that id (made on the first visit, with their work), seen now.

    Raises StudyRefused (nothing written) for a malformed id, an unknown link, or a new participant of a closed or
    full study (one with `max_people` participants, or with no study item left to give).
    """
    for value, name in ((participant_id, "PROLIFIC_PID"), (study_id, "STUDY_ID"), (session_id, "SESSION_ID")):
        if (value or name == "PROLIFIC_PID") and not PARTICIPANT_ID.match(value):
            raise StudyRefused("bad_id", f"{name} is missing or malformed: expected up to 64 letters, digits or _")
    now = timezone.now()
    with transaction.atomic():
        found = Recruitment.objects.filter(token=token).values_list("pk", "pool_id").first()
        if found is None:
            raise StudyRefused("unknown", "This study link is not (or no longer) valid.")
        # The pool first, then the recruitment: the order every writer of the pool's queues locks them in.
        Pool.objects.select_for_update().filter(pk=found[1]).first()
        recruitment = Recruitment.objects.select_for_update().select_related("pool").filter(pk=found[0]).first()
        if recruitment is None or recruitment.token != token:  # rotated or deleted meanwhile
            raise StudyRefused("unknown", "This study link is not (or no longer) valid.")
        participant = (
            Participant.objects.select_related("user")
            .filter(recruitment=recruitment, participant_id=participant_id)
            .first()
        )
        _release_idle(recruitment=recruitment, now=now)
        if participant is not None:
            changed = ["last_seen_at"]
            participant.last_seen_at = now
            if session_id and session_id != participant.session_id:
                participant.session_id = session_id
                changed.append("session_id")
            participant.save(update_fields=changed)
            if participant.finished_at is None:
                _top_up(recruitment=recruitment, participant=participant)
            return Visit(participant=participant, finished=participant.finished_at is not None)
        if not recruitment.is_open:
            raise StudyRefused("closed", "This study is closed: it takes no more participants.")
        if recruitment.max_people is not None and recruitment.participants.count() >= recruitment.max_people:
            raise StudyRefused("full", "This study is full: every place has been taken.")
        participant = _participant_create(recruitment=recruitment, ids=(participant_id, study_id, session_id), now=now)
        if not _top_up(recruitment=recruitment, participant=participant):
            raise StudyRefused("no_items", "This study is full: every item has its annotators.")
    return Visit(participant=participant, created=True)


def _participant_create(*, recruitment: Recruitment, ids: tuple[str, str, str], now) -> Participant:
    user = get_user_model().objects.create(
        username=_pseudonym(recruitment.platform), password=make_password(None), is_active=True
    )
    user.groups.add(roles_ensure()[ANNOTATOR])
    participant_id, study_id, session_id = ids
    participant = Participant.objects.create(
        recruitment=recruitment,
        user=user,
        participant_id=participant_id,
        study_id=study_id,
        session_id=session_id,
        last_seen_at=now,
    )
    audit_record(
        event="pool.participant_join",
        obj=recruitment.pool,
        action=CREATE,
        data={"annotator": user.get_username(), "platform": recruitment.platform},
    )
    return participant


def participant_finish(*, participant: Participant) -> Visit:
    """The participant's state at the finish page: finished (with the code shown, once stored) or still working.

    Finished means failed the training round (the screened code; their open study items go back to the queue), or
    nothing open in their queue and their `items_per_person` study items annotated (or none left to give them).
    """
    with transaction.atomic():
        Pool.objects.select_for_update().filter(recruitment__pk=participant.recruitment_id).first()
        recruitment = Recruitment.objects.select_for_update().select_related("pool").get(pk=participant.recruitment_id)
        participant = Participant.objects.select_for_update().select_related("user").get(pk=participant.pk)
        if participant.finished_at is not None:
            return Visit(participant=participant, finished=True)
        now = timezone.now()
        participant.last_seen_at = now
        participant.save(update_fields=["last_seen_at"])
        pool, user = recruitment.pool, participant.user
        outcome = None
        if qualification_status(pool=pool, annotator=user)["status"] == FAILED:
            Assignment.objects.filter(pool=pool, annotator=user, annotated=False, item__kind=STUDY).delete()
            pool_changed(pools=[pool])
            outcome, code = Participant.SCREENED, recruitment.screened_code
        elif not Assignment.objects.filter(pool=pool, annotator=user, annotated=False).exists():
            done = Assignment.objects.filter(pool=pool, annotator=user, annotated=True, item__kind=STUDY).count()
            if done < recruitment.items_per_person:
                _release_idle(recruitment=recruitment, now=now)
            if done >= recruitment.items_per_person or not _top_up(recruitment=recruitment, participant=participant):
                outcome, code = Participant.COMPLETED, recruitment.completion_code
        if outcome is None:
            return Visit(participant=participant)
        participant.finished_at = now
        participant.outcome = outcome
        participant.code_shown = code
        participant.save(update_fields=["finished_at", "outcome", "code_shown"])
        audit_record(
            event="pool.participant_finish", obj=pool, data={"annotator": user.get_username(), "outcome": outcome}
        )
    return Visit(participant=participant, finished=True)
