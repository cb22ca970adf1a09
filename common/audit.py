"""The audit trail: who did what, to which object, and when (docs/operations.md, "The audit trail").

Entries are django-auditlog's `LogEntry` rows, written here explicitly by the services that act (a job cancelled, a
token issued, an assignment made), because most of those writes are bulk or hand-written SQL that model signals never
see. Only the user model is registered with auditlog's signals (accounts/apps.py), so that changes made in Django's
admin site (a role, a deactivation) are recorded too. The event's name (`job.cancel`) is in `additional_data`.

An entry never holds a secret: `audit_record` refuses changes or data naming a password, a token or a key.
"""

from __future__ import annotations

from typing import Any

from auditlog.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import models

CREATE, UPDATE, DELETE = LogEntry.Action.CREATE, LogEntry.Action.UPDATE, LogEntry.Action.DELETE
# Names that would carry a secret; an entry naming one is refused rather than stored.
SECRET_NAMES = ("password", "token", "key", "secret")


class AuditSecretError(ValueError):
    """An audit entry would have held a password, a token or a key."""


def _check_no_secret(values: dict | None) -> None:
    for name in values or {}:
        if any(secret in str(name).lower() for secret in SECRET_NAMES):
            raise AuditSecretError(f"an audit entry may not hold {name!r}")


def _actor_id(actor) -> int | None:
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return actor.pk


def audit_record(
    *,
    event: str,
    obj: models.Model,
    actor=None,
    action: int = UPDATE,
    changes: dict[str, list[Any]] | None = None,
    data: dict[str, Any] | None = None,
    object_repr: str | None = None,
) -> LogEntry:
    """Record `event` (e.g. "job.cancel") on `obj` by `actor` (a user, or None for a command or the system).
    `changes` maps a field to [old, new]; `data` holds what else the event says (counts, names)."""
    _check_no_secret(changes)
    _check_no_secret(data)
    return LogEntry.objects.create(
        content_type=ContentType.objects.get_for_model(obj),
        object_pk=str(obj.pk),
        object_id=obj.pk if isinstance(obj.pk, int) else None,
        object_repr=object_repr if object_repr is not None else str(obj),
        action=action,
        changes=changes,
        actor_id=_actor_id(actor),
        additional_data={"event": event, **(data or {})},
    )


def audit_event(entry: LogEntry) -> str:
    """The entry's event name: the one recorded, or, for the user model's signal entries, `<model>.<action>`."""
    named = (entry.additional_data or {}).get("event") if isinstance(entry.additional_data, dict) else None
    if named:
        return str(named)
    return f"{entry.content_type.model}.{entry.get_action_display()}"
