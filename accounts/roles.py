"""Roles are Django groups. An admin may do everything a researcher may; nobody else inherits."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)

# Which roles satisfy a requirement.
_SATISFIES = {
    ANNOTATOR: {ANNOTATOR},
    RESEARCHER: {RESEARCHER, ADMIN},
    ADMIN: {ADMIN},
}


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    groups = getattr(user, "groups", None)  # PermissionsMixin's: Django's user model has them
    if not user.is_authenticated or groups is None:
        return set()
    cached = getattr(user, "_concord_roles", None)
    if cached is None:
        cached = roles_remember(user, groups.filter(name__in=ROLES).values_list("name", flat=True))
    return cached


def roles_remember(user: AbstractBaseUser, group_names: Iterable[str]) -> set[str]:
    """Keep the user's roles on this request's user object, from the names of their groups (a superuser is an admin).

    Nothing outlives the request, so a role taken away applies from the next request on.
    """
    roles = {name for name in group_names if name in ROLES}
    if getattr(user, "is_superuser", False):
        roles.add(ADMIN)
    user._concord_roles = roles  # type: ignore[attr-defined]  # kept on this request's user object only
    return roles


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    return bool(user_roles(user) & _SATISFIES[role])


def role_required(role: str) -> Callable:
    """View decorator: login first (redirect), then the role (403)."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        @login_required
        def wrapped(request, *args, **kwargs):
            if not has_role(request.user, role):
                raise PermissionDenied(f"This page is for the {role} role.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class _HasRole(BasePermission):
    role: str

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, self.role)


class IsAnnotator(_HasRole):
    role = ANNOTATOR
    message = "Only annotators may do this."


class IsResearcher(_HasRole):
    role = RESEARCHER
    message = "Only researchers may do this."


class IsAdmin(_HasRole):
    role = ADMIN
    message = "Only admins may do this."
