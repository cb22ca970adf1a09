"""The participants of a pool's recruitment, for payment and approval on the platform (`export_participants`, the
pool page's download). The only read that returns the platform's participant, study and session ids."""

from __future__ import annotations

import io
from collections import defaultdict

from annotation.models import GOLD, STUDY, Annotation, Participant, Pool
from annotation.selectors import qualification_statuses
from common.safe_csv import SafeDictWriter

PARTICIPANT_COLUMNS = [
    "participant_id",
    "study_id",
    "session_id",
    "pseudonym",
    "started_at",
    "finished_at",
    "items",
    "seconds",
    "gold_accuracy",
    "qualification",
    "code_shown",
]


def participant_rows(*, pool: Pool) -> list[dict]:
    """One row per participant, in the order they came: `items` counts their annotated study items, `seconds` their
    active time (summed over every item of the pool), `gold_accuracy` the share of their saved gold items labelled
    as expected (empty with none), `qualification` the training round's status, `code_shown` the code they were given
    (empty until they finish, and for one screened out of a study without a screened code)."""
    participants = list(
        Participant.objects.filter(recruitment__pool=pool).select_related("user").order_by("started_at", "pk")
    )
    user_ids = [participant.user_id for participant in participants]
    items: dict[int, int] = defaultdict(int)
    seconds: dict[int, float] = defaultdict(float)
    gold: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # saved, as expected
    for user_id, kind, label, expected, spent in Annotation.objects.filter(
        item__pool=pool, annotator_id__in=user_ids
    ).values_list("annotator_id", "item__kind", "label", "item__gold_label", "seconds"):
        seconds[user_id] += spent
        if kind == STUDY:
            items[user_id] += 1
        elif kind == GOLD:
            gold[user_id][0] += 1
            gold[user_id][1] += label == expected
    statuses = qualification_statuses(pool=pool)
    rows = []
    for participant in participants:
        username = participant.user.get_username()
        saved, right = gold[participant.user_id]
        rows.append(
            {
                "participant_id": participant.participant_id,
                "study_id": participant.study_id,
                "session_id": participant.session_id,
                "pseudonym": username,
                "started_at": participant.started_at.isoformat(),
                "finished_at": participant.finished_at.isoformat() if participant.finished_at else "",
                "items": items[participant.user_id],
                "seconds": round(seconds[participant.user_id], 3),
                "gold_accuracy": round(right / saved, 4) if saved else "",
                "qualification": statuses.get(username, {}).get("status", "not_required"),
                "code_shown": participant.code_shown,
            }
        )
    return rows


def participants_csv(*, pool: Pool) -> str:
    """The participants as CSV, every cell safe to open in a spreadsheet (common/safe_csv.py)."""
    out = io.StringIO()
    writer = SafeDictWriter(out, fieldnames=PARTICIPANT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(participant_rows(pool=pool))
    return out.getvalue()
