"""The qualification round's second chance (docs/domain.md, 'Assignment and the annotator's queue'): a researcher may
change a pool's pass mark, or give an annotator a new training round. Both are audited."""

from __future__ import annotations

import math

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import TRAINING, Annotation, Assignment, Pool
from annotation.selectors import FAILED, qualification_status
from annotation.services.stamp import pool_changed
from common.audit import audit_record
from common.errors import ServiceError


class QualificationError(ServiceError, ValueError):
    """The pass mark or the reset cannot be applied; the message says why and what to do."""


def pass_mark_parse(value: str) -> float:
    """A pass mark written as a share (0.7) or a percentage (70%); QualificationError unless it is in (0, 1]."""
    text = str(value).strip()
    percent = text.endswith("%")
    try:
        mark = float(text.removesuffix("%")) / (100 if percent else 1)
    except ValueError:
        raise QualificationError(f"the pass mark {text!r} is not a number; give a share such as 0.7 or 70%") from None
    if not math.isfinite(mark) or not 0 < mark <= 1:
        raise QualificationError(f"the pass mark {text!r} must be above 0 and at most 1 (or 100%)")
    return mark


@transaction.atomic
def pool_pass_mark_set(*, pool: Pool, pass_mark: float, user=None) -> Pool:
    """Set the share of training items an annotator must label as expected; whoever now reaches it goes on."""
    if not math.isfinite(pass_mark) or not 0 < pass_mark <= 1:
        raise QualificationError(f"the pass mark {pass_mark} must be above 0 and at most 1")
    locked = Pool.objects.select_for_update().get(pk=pool.pk)
    old = locked.pass_mark
    if old == pass_mark:
        return locked
    Pool.objects.filter(pk=pool.pk).update(pass_mark=pass_mark)
    pool_changed(pools=[pool])
    pool.pass_mark = locked.pass_mark = pass_mark
    audit_record(event="pool.pass_mark", obj=locked, actor=user, changes={"pass_mark": [old, pass_mark]})
    return locked


@transaction.atomic
def qualification_reset(*, pool: Pool, username: str, user=None) -> dict:
    """Give `username` a new training round in `pool`: their training answers are deleted (the audit entry keeps
    them: item, label given, label expected) and their training items open again, first in their queue as before.
    Only an annotator who failed the round can be reset. Returns the qualification status they had."""
    annotator = get_user_model().objects.filter(username=username).first()
    if annotator is None:
        raise QualificationError(f"no user named {username!r}")
    Pool.objects.select_for_update().get(pk=pool.pk)  # one reset or pass-mark change at a time
    before = qualification_status(pool=pool, annotator=annotator)
    if before["status"] != FAILED:
        reason = {
            "not_required": "has no training items in this pool",
            "in_progress": "has not finished the training round yet",
            "passed": "passed the training round",
        }[before["status"]]
        raise QualificationError(f"{username} {reason}; only an annotator who failed it can be given a new round")
    answers = Annotation.objects.filter(item__pool=pool, item__kind=TRAINING, annotator=annotator)
    kept = [
        {"item": public_id, "label": label, "expected": expected}
        for public_id, label, expected in answers.order_by("item__public_id").values_list(
            "item__public_id", "label", "item__gold_label"
        )
    ]
    answers.delete()  # spans and referents go with them
    Assignment.objects.filter(pool=pool, annotator=annotator, item__kind=TRAINING).update(annotated=False)
    pool_changed(pools=[pool])
    audit_record(
        event="pool.qualification_reset",
        obj=pool,
        actor=user,
        data={
            "annotator": username,
            "correct": before["correct"],
            "total": before["total"],
            "score": before["score"],
            "pass_mark": before["pass_mark"],
            "answers": kept,
        },
    )
    return before
