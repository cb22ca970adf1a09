"""A database of its own for verifying a study bundle (docs/domain.md, 'A study others can check').

Verification must give the same answer wherever it runs, so it never touches the database Concord runs on: for the
time of the check, this thread's default connection is a fresh SQLite database in a temporary folder whose tables
are created from this Concord's models (the schema its migrations build, without their data), whatever the server's
own database is (SQLite or PostgreSQL). The import and the report's recomputation run there, unchanged, and the
folder is removed afterwards. SQLite ships with Python, so this works on every setup and needs no right to create
databases. The tables are created once per process: the first check's empty schema is kept in memory and copied into
each later check's file (SQLite's backup API), instead of every model's table and index being created again.
"""

from __future__ import annotations

import copy
import sqlite3
import tempfile
import threading
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
            _schema_create(isolated)
            yield
        finally:
            connections[DEFAULT_DB_ALIAS] = original
            ContentType.objects.clear_cache()
            isolated.close()


# The empty schema of this process's models, in memory: copied into each isolated database (its key: the models).
_schemas: dict[tuple[str, ...], sqlite3.Connection] = {}
_schemas_lock = threading.Lock()


def _schema_create(isolated: DatabaseWrapper) -> None:
    """This Concord's tables in the new database: a copy of the kept schema, or, the first time, made from the models
    (and kept)."""
    models = [model for model in apps.get_models() if model._meta.managed and not model._meta.proxy]
    key = tuple(sorted(model._meta.label for model in models))
    isolated.ensure_connection()
    with _schemas_lock:
        kept = _schemas.get(key)
        if kept is not None:
            kept.backup(isolated.connection)
            return
        with isolated.schema_editor() as editor:
            for model in models:
                editor.create_model(model)
        kept = sqlite3.connect(":memory:", check_same_thread=False)
        isolated.connection.backup(kept)
        _schemas[key] = kept
