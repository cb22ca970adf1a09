"""The audit trail: who did what, to which object, and when (docs/operations.md, "The audit trail").

Entries are django-auditlog's `LogEntry` rows, written here explicitly by the services that act (a job cancelled, a
token issued, an assignment made, an annotation saved), because most of those writes are bulk or hand-written SQL that
model signals never see. `audit_record` is the one writer of the table: no service inserts into it by its own SQL. Only the user model is registered with auditlog's signals (accounts/apps.py), so that changes made in Django's
admin site (a role, a deactivation) are recorded too. The event's name (`job.cancel`) is in `additional_data`.

An entry never holds a secret: `audit_record` refuses changes or data naming a password, a token or a key.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from auditlog.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q

from common.safe_csv import SafeDictWriter

CREATE, UPDATE, DELETE = LogEntry.Action.CREATE, LogEntry.Action.UPDATE, LogEntry.Action.DELETE
# Names that would carry a secret; an entry naming one is refused rather than stored.
SECRET_NAMES = ("password", "token", "key", "secret")
# Names that hold one of those words and no secret: a job's parameter counting the text's tokens.
NOT_SECRET_NAMES = ("max_new_tokens",)


class AuditSecretError(ValueError):
    """An audit entry would have held a password, a token or a key."""


def _check_no_secret(values: dict | None) -> None:
    for name in values or {}:
        if name not in NOT_SECRET_NAMES and any(secret in str(name).lower() for secret in SECRET_NAMES):
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
    timestamp=None,
) -> LogEntry:
    """Record `event` (e.g. "job.cancel") on `obj` by `actor` (a user, or None for a command or the system).
    `changes` maps a field to [old, new]; `data` holds what else the event says (counts, names); `timestamp` is the
    event's time when the caller stamped its own rows with it (default: now). `obj` may be an unsaved instance that
    only carries its primary key (`Annotation(pk=...)`): nothing but its type and key is read."""
    _check_no_secret(changes)
    _check_no_secret(data)
    extra = {} if timestamp is None else {"timestamp": timestamp}
    return LogEntry.objects.create(
        **extra,
        content_type=ContentType.objects.get_for_model(obj),  # cached by Django after the first call
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


# --- reading it: the page and its CSV (accounts/views.py) ---------------------------------------------------------

AUDIT_COLUMNS = [
    "timestamp",
    "event",
    "action",
    "actor",
    "object_type",
    "object_id",
    "object",
    "changes",
    "data",
    "remote_addr",
]


# What a reader may not see of the study's trail, one hook per app that owns such rows (annotation: the entries on
# another project's pools, docs/domain.md "Projects"): each returns the Q of the entries hidden from that reader, or
# None when it hides nothing. A lower app cannot name the rows of a higher one; the higher one registers at start-up.
AUDIT_HIDDEN: list[Callable[[Any], Q | None]] = []


def audit_hidden_register(hook: Callable[[Any], Q | None]) -> None:
    if hook not in AUDIT_HIDDEN:
        AUDIT_HIDDEN.append(hook)


# The apps whose entries are about accounts (users, roles, tokens, lockouts) rather than a study: admins' business.
ACCOUNT_APPS = ("auth", "authtoken", "axes")


def audit_entries(
    *,
    object_type: str = "",
    object_id: str = "",
    username: str = "",
    since=None,
    until=None,
    event: str = "",
    accounts: bool = True,
    reader=None,
):
    """The entries, newest first, filtered by the object's type (its model's name, e.g. "pool") and id, the actor's
    username, an event name and a date range (`since` and `until` are dates, both included). `accounts=False`
    leaves out the entries on accounts (a user, its roles and tokens): the study's trail, which researchers see.
    `reader`: leave out what the registered hooks hide from that person (another project's pools)."""
    entries = LogEntry.objects.select_related("content_type", "actor").order_by("-timestamp", "-pk")
    if not accounts:
        user_type = ContentType.objects.get_for_model(get_user_model())
        entries = entries.exclude(content_type__app_label__in=ACCOUNT_APPS).exclude(content_type=user_type)
    for hook in AUDIT_HIDDEN if reader is not None else ():
        hidden = hook(reader)
        if hidden is not None:
            entries = entries.exclude(hidden)
    if object_type:
        entries = entries.filter(content_type__model=object_type.lower())
    if object_id:
        entries = entries.filter(object_pk=object_id)
    if username:
        entries = entries.filter(actor__username=username)
    if event:
        entries = entries.filter(additional_data__event=event)
    if since is not None:
        entries = entries.filter(timestamp__date__gte=since)
    if until is not None:
        entries = entries.filter(timestamp__date__lte=until)
    return entries


def audit_row(entry: LogEntry) -> dict[str, Any]:
    """One entry as the page and the CSV show it (AUDIT_COLUMNS); `changes` and `data` as JSON text."""
    data = {k: v for k, v in (entry.additional_data or {}).items() if k != "event"}
    return {
        "timestamp": entry.timestamp.isoformat(),
        "event": audit_event(entry),
        "action": entry.get_action_display(),
        "actor": entry.actor.get_username() if entry.actor is not None else "",
        "object_type": entry.content_type.model,
        "object_id": entry.object_pk,
        "object": entry.object_repr,
        "changes": json.dumps(entry.changes, sort_keys=True, default=str) if entry.changes else "",
        "data": json.dumps(data, sort_keys=True, default=str) if data else "",
        "remote_addr": entry.remote_addr or "",
    }


def _shown(value: Any) -> str:
    """A value of an entry as a reader wants it: text as it is, None as "none", anything else as compact JSON."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def audit_changes_lines(entry: LogEntry) -> list[str]:
    """The entry's changes, one line a field: `label: correct → misgendering`, or for a role (a many-to-many
    change) `groups: added researcher`. The CSV keeps the JSON; the page shows these."""
    lines = []
    for field, change in sorted((entry.changes or {}).items()):
        if isinstance(change, dict) and change.get("type") == "m2m":
            verb = {"add": "added", "delete": "removed"}.get(str(change.get("operation")), str(change.get("operation")))
            lines.append(f"{field}: {verb} {', '.join(str(item) for item in change.get('objects') or [])}")
        elif isinstance(change, list | tuple) and len(change) == 2:
            lines.append(f"{field}: {_shown(change[0])} \u2192 {_shown(change[1])}")
        else:
            lines.append(f"{field}: {_shown(change)}")
    return lines


def audit_data_lines(entry: LogEntry) -> list[str]:
    """What else the entry says (counts, names), one `key: value` line each, the event's name left out."""
    data = entry.additional_data if isinstance(entry.additional_data, dict) else {}
    return [f"{key}: {_shown(value)}" for key, value in sorted(data.items()) if key != "event"]


def audit_csv(entries) -> str:
    """The entries as CSV, every cell spreadsheet-safe (common/safe_csv.py)."""
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=AUDIT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for entry in entries.iterator(chunk_size=2000):
        writer.writerow(audit_row(entry))
    return buffer.getvalue()
