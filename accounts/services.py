from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from accounts.roles import ADMIN, ROLES


def roles_ensure() -> None:
    for role in ROLES:
        Group.objects.get_or_create(name=role)


@transaction.atomic
def user_create_or_update(*, username: str, role: str, password: str) -> tuple[object, bool]:
    """Create the user (or reset an existing one's password) and give it exactly this role."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: choose one of {', '.join(ROLES)}")
    roles_ensure()
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    user.set_password(password)
    # Admins manage the registry and jobs through Django's admin site too.
    user.is_staff = role == ADMIN
    user.is_superuser = role == ADMIN
    user.save()
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    user.groups.add(Group.objects.get(name=role))
    return user, created
