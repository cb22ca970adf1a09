"""Projects: the team a pool belongs to (docs/domain.md, "Projects").

A project's members are researchers; they alone see its pools and everything under them (reports, exports, the audit
trail's entries, participants). Admins see every project's. Pools made without a project choice go to the default
project, which every researcher made by `create_user` (and the demo) joins.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

DEFAULT_PROJECT = "default"


class Project(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="projects")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def default_project_id() -> int:
    """The default project's key, made on first use: the default of every pool not given a project, so that every
    way of making a pool (the services, the study bundle's load, the tests' factories) puts it in one."""
    return Project.objects.get_or_create(name=DEFAULT_PROJECT)[0].pk
