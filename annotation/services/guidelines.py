"""A pool's guidelines, versioned (docs/domain.md, 'A study others can check'): an edit adds a version, numbered 1, 2,
...; earlier versions stay readable, and each annotation keeps the version in force when it was saved."""

from __future__ import annotations

from django.db import transaction

from annotation.models import Pool, PoolGuideline
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from common.errors import ServiceError

MAX_GUIDELINE_CHARS = 200_000


class GuidelineError(ServiceError, ValueError):
    """The text cannot become a version (empty, too long, or the same as the current one)."""


@transaction.atomic
def pool_guidelines_set(*, pool: Pool, text: str, user=None) -> PoolGuideline:
    """Make `text` (Markdown) the pool's current guidelines: a new version, one more than the last. The pool's row
    is locked, so two edits at once get consecutive numbers; `Pool.guideline_version` follows in the same
    transaction (the annotator's save reads it from there)."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise GuidelineError("the guidelines are empty")
    if len(text) > MAX_GUIDELINE_CHARS:
        raise GuidelineError(f"the guidelines are longer than {MAX_GUIDELINE_CHARS:,} characters")
    if "\x00" in text:  # PostgreSQL cannot store one; a pasted binary file is the usual source
        raise GuidelineError("the guidelines hold a NUL character (\\x00), which is not text; remove it")
    locked = Pool.objects.select_for_update().get(pk=pool.pk)
    current = locked.guidelines.order_by("-version").first()
    if current is not None and current.text == text:
        raise GuidelineError(f"the text is the same as version {current.version}")
    version = (current.version if current is not None else 0) + 1
    guideline = PoolGuideline.objects.create(pool=locked, version=version, text=text, created_by=user)
    Pool.objects.filter(pk=pool.pk).update(guideline_version=version)
    pool_changed(pools=[pool])
    pool.guideline_version = version
    audit_record(
        event="pool.guidelines",
        obj=locked,
        actor=user,
        action=CREATE,
        changes={"guideline_version": [current.version if current is not None else None, version]},
        data={"characters": len(text)},
    )
    return guideline


def pool_guideline(*, pool: Pool, version: int | None = None) -> PoolGuideline | None:
    """One version of the pool's guidelines (the current one when `version` is None), or None."""
    number = pool.guideline_version if version is None else version
    if number is None:
        return None
    return PoolGuideline.objects.filter(pool=pool, version=number).first()
