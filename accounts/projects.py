"""Who a project holds, and which project a new pool goes to (docs/domain.md, "Projects").

Every way of making a pool (the pool commands, `POST /api/pools/`, the pool forms, an escalation, a study bundle's
load) names its project through `project_choose`; the commands take `--project` from `project_argument_add`.
The pools a person may see are annotation's business (`annotation.access`), read from `projects_of` here.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet

from accounts.models import DEFAULT_PROJECT, Project
from accounts.roles import ADMIN, has_role
from common.audit import CREATE, UPDATE, audit_record
from common.errors import ServiceError


class ProjectError(ServiceError, ValueError):
    """A project that does not exist, or is not the person's, or a member who does not exist."""

    def body(self) -> dict[str, object]:
        return {"project": [str(self)]}  # the API's `project` field


def projects_of(*, user) -> QuerySet[Project]:
    """The projects whose pools `user` may see: every one for an admin, their own for anyone else."""
    if has_role(user, ADMIN):
        return Project.objects.all()
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    return Project.objects.filter(members=user)


def project_default() -> Project:
    return Project.objects.get_or_create(name=DEFAULT_PROJECT)[0]


def project_choose(*, name: str | None = None, user=None) -> Project:
    """The project a new pool goes to.

    `name` given: that project, which must exist and, for a person who is not an admin, be one of theirs (the same
    message either way, so that a project's name does not leak). No name: a person's only project when they belong to
    exactly one, else the default project, which must then be theirs (an admin's, or a command's: the default)."""
    acting = user is not None and getattr(user, "is_authenticated", False) and not has_role(user, ADMIN)
    if name:
        found = Project.objects.filter(name=name).first()
        if found is None or (acting and not found.members.filter(pk=user.pk).exists()):
            return _refuse(name=name, user=user if acting else None)
        return found
    if not acting:
        return project_default()
    own = list(Project.objects.filter(members=user).order_by("name"))
    if len(own) == 1:
        return own[0]
    default = next((project for project in own if project.name == DEFAULT_PROJECT), None)
    if default is not None:
        return default
    if not own:
        raise ProjectError("you belong to no project: ask an admin to add you to one (manage.py project_add)")
    raise ProjectError(f"choose a project: you belong to {', '.join(project.name for project in own)}")


def _refuse(*, name: str, user) -> Project:
    projects = projects_of(user=user) if user is not None else Project.objects.all()
    known = ", ".join(projects.order_by("name").values_list("name", flat=True)) or "none"
    whose = "of yours" if user is not None else "known"
    raise ProjectError(f"no project {name!r} {whose} (projects: {known})")


@transaction.atomic
def project_add(*, name: str, members: Iterable[str] = (), actor=None) -> tuple[Project, bool, list[str]]:
    """Make the project (or keep the one of that name) and add these usernames to it: (project, created, the
    usernames added now). An unknown username refuses the whole call: nothing is written."""
    usernames = list(dict.fromkeys(member.strip() for member in members if member.strip()))
    users = {user.get_username(): user for user in get_user_model().objects.filter(username__in=usernames)}
    unknown = [username for username in usernames if username not in users]
    if unknown:
        raise ProjectError(f"no user named {', '.join(repr(username) for username in unknown)}; nothing was written")
    project, created = Project.objects.get_or_create(name=name)
    held = set(project.members.filter(pk__in=[user.pk for user in users.values()]).values_list("pk", flat=True))
    added = [username for username in usernames if users[username].pk not in held]  # in the order given
    if added:
        project.members.add(*(users[username] for username in added))
    if created or added:
        audit_record(
            event="project.create" if created else "project.members",
            obj=project,
            actor=actor,
            action=CREATE if created else UPDATE,
            data={"added": added},
        )
    return project, created, added


def project_argument_add(parser, *, what: str = "the new pool") -> None:
    """`--project NAME` on a command that makes a pool."""
    parser.add_argument(
        "--project",
        default=None,
        help=f"the project {what} belongs to (its members alone see it; default: the default project)",
    )


def project_option(options: dict) -> Project:
    """The project a command's `--project` names (see `project_argument_add`; none: the default project), or the
    command's error naming the flag."""
    from django.core.management.base import CommandError

    try:
        return project_choose(name=options.get("project"))
    except ProjectError as exc:
        raise CommandError(f"--project: {exc}") from None
