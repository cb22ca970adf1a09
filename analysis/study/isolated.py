"""A database of its own for verifying a study bundle (docs/domain.md, 'A study others can check').

Verification must give the same answer wherever it runs, so it never touches the database Concord runs on: for the
time of the check, this thread's default connection is a fresh SQLite database in a temporary folder whose tables
are created from this Concord's models (the schema its migrations build, without their data), whatever the server's
own database is (SQLite or PostgreSQL). The import and the report's recomputation run there, unchanged, and the
folder is removed afterwards. SQLite ships with Python, so this works on every setup, needs no right to create
databases, and takes a fraction of a second.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.sqlite3.base import DatabaseWrapper


@contextmanager
def isolated_database() -> Iterator[None]:
    """Within the block, the ORM of this thread reads and writes a new, empty SQLite database."""
    original = connections[DEFAULT_DB_ALIAS]
    with tempfile.TemporaryDirectory(prefix="concord-verify-") as folder:
        settings_dict = copy.deepcopy(original.settings_dict)
        settings_dict.update(
            ENGINE="django.db.backends.sqlite3",
            NAME=str(Path(folder) / "verify.sqlite3"),
            OPTIONS={"init_command": "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"},
            CONN_MAX_AGE=None,
            CONN_HEALTH_CHECKS=False,
            ATOMIC_REQUESTS=False,
            AUTOCOMMIT=True,
            TEST={},
        )
        isolated = DatabaseWrapper(settings_dict, DEFAULT_DB_ALIAS)
        connections[DEFAULT_DB_ALIAS] = isolated
        ContentType.objects.clear_cache()  # the process's cache holds the other database's ids
        try:
            with isolated.schema_editor() as editor:
                for model in apps.get_models():
                    if model._meta.managed and not model._meta.proxy:
                        editor.create_model(model)
            yield
        finally:
            connections[DEFAULT_DB_ALIAS] = original
            ContentType.objects.clear_cache()
            isolated.close()
