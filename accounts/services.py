from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from accounts.models import DEFAULT_PROJECT, Project
from accounts.roles import ADMIN, RESEARCHER, ROLES
from common.audit import CREATE, DELETE, audit_record


def roles_ensure() -> dict[str, Group]:
    """The role groups exist (one query when they do); returns them by name."""
    groups = {group.name: group for group in Group.objects.filter(name__in=ROLES)}
    for role in ROLES:
        if role not in groups:
            groups[role], _ = Group.objects.get_or_create(name=role)
    return groups


@transaction.atomic(savepoint=False)
def user_create_or_update(
    *, username: str, role: str, password: str, project: str | None = None
) -> tuple[object, bool]:
    """Create the user (or reset an existing one's password) and give it exactly this role. A researcher who gains
    the role joins `project` (made if missing; default: the default project).

    The audit trail records what changed: a new user's creation and its role, an existing user's changed fields and
    the roles it lost or gained (none when it keeps its role)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: choose one of {', '.join(ROLES)}")
    groups = roles_ensure()
    admin = role == ADMIN  # admins manage the registry and jobs through Django's admin site too
    # Read, then create inside this function's transaction: a user created meanwhile by another process makes the
    # insert fail and nothing of this call is kept. No savepoint, here or get_or_create's (two statements each):
    # inside a caller's transaction the failure undoes the caller's work too, and no caller goes on after one.
    existing = get_user_model().objects.filter(username=username).first()
    created = existing is None
    held: set[str] = set()
    if existing is None:
        user = get_user_model().objects.create(
            username=username, password=make_password(password), is_staff=admin, is_superuser=admin
        )
    else:
        user = existing
        user.set_password(password)
        user.is_staff = user.is_superuser = admin
        user.save()
        held = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    if held - {role}:
        user.groups.remove(*(groups[name] for name in held - {role}))
    if role not in held:
        user.groups.add(groups[role])
    if role == RESEARCHER and role not in held:
        # A new researcher joins the default project, where pools made without a project go (docs/domain.md,
        # "Projects"); `project_add` puts them in others.
        Project.objects.get_or_create(name=project or DEFAULT_PROJECT)[0].members.add(user)
    elif project:
        Project.objects.get_or_create(name=project)[0].members.add(user)
    return user, created


def token_expires_at(*, created: datetime) -> datetime:
    return created + settings.API_TOKEN_TTL


def token_is_expired(*, created: datetime) -> bool:
    return token_expires_at(created=created) <= timezone.now()


@transaction.atomic
def token_issue(*, user) -> Token:
    """The user's API token: the current one while it lasts, else a new one (an expired token is deleted)."""
    token = Token.objects.select_for_update().filter(user=user).first()
    if token is not None and not token_is_expired(created=token.created):
        return token
    expired = token is not None
    if token is not None:
        token.delete()
    created = Token.objects.create(user=user)
    # Recorded on the user, never on the token: a token's primary key is its secret.
    audit_record(event="token.create", obj=user, actor=user, action=CREATE, data={"replaced_expired": expired})
    return created


def tokens_revoke(*, user, actor=None) -> int:
    """Delete every API token of the user (logout, a changed password); returns how many there were."""
    deleted, _ = Token.objects.filter(user=user).delete()
    if deleted:
        audit_record(event="token.revoke", obj=user, actor=actor or user, action=DELETE, data={"revoked": deleted})
    return deleted
