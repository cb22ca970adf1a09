"""The PostgreSQL template that the test databases are copied from (and `sqlite_migrated`, the same idea for the
SQLite files of the tests that start Concord as a process).

Migrating a test database takes about 4 s of a pytest worker's start, on every run. The migrations only change when
their files do, so the schema and the data migrations' rows are built once per set of migration files, in a database
named for their digest (`test_<name>_template_<digest>`), and each worker's test database is created as a copy of it
(PostgreSQL's `CREATE DATABASE ... TEMPLATE`, through Django's `TEST["TEMPLATE"]`). Django still runs `migrate` on
the copy, which finds nothing to apply. The template stays between runs; a new set of migrations builds a new one and
drops the older ones.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
# Any fixed number: the lock that lets one pytest worker build the template while the others wait for it.
_LOCK = 7_220_861_374


def migrations_digest() -> str:
    """A digest of every installed app's migration files (their names and contents)."""
    from django.apps import apps

    digest = hashlib.sha256()
    for config in sorted(apps.get_app_configs(), key=lambda config: config.label):
        folder = Path(config.path) / "migrations"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else ():
            digest.update(f"{config.label}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def template_ensure(database: dict) -> str:
    """The name of the migrated template for the PostgreSQL `database` (a Django DATABASES entry), built if missing."""
    import psycopg

    prefix = f"test_{database['NAME']}_template_"
    template = prefix + migrations_digest()
    with psycopg.connect(_url(database, "postgres"), autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", [_LOCK])
        try:
            found = connection.execute("SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [prefix])
            names = [row[0] for row in found]
            if template not in names:
                building = template + "_building"
                for name in names:  # older sets of migrations, and a build interrupted before its rename
                    connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                connection.execute(f'CREATE DATABASE "{building}"')
                migrated = subprocess.run(
                    [sys.executable, str(REPO / "manage.py"), "migrate", "--verbosity", "0"],
                    env={**os.environ, "DATABASE_URL": _url(database, building)},
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if migrated.returncode:
                    connection.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                    raise RuntimeError(f"migrating the test template failed:\n{migrated.stdout}{migrated.stderr}")
                connection.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", [_LOCK])
    return template


def _url(database: dict, name: str) -> str:
    """The URL of database `name` on the server of `database`."""
    credentials = quote(database.get("USER") or "", safe="")
    if database.get("PASSWORD"):
        credentials += ":" + quote(database["PASSWORD"], safe="")
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{credentials}{'@' if credentials else ''}{database.get('HOST') or 'localhost'}{port}/{name}"


def sqlite_migrated(target: Path, env: dict) -> None:
    """A migrated SQLite database at `target`, for a test that starts Concord as a process on a file of its own: a copy
    of a file migrated once per set of migration files (var/test-sqlite/<digest>.sqlite3, kept between runs; a
    `migrate` of its own took 5-7 s of such a test). `env` is the environment the copy is for (the template is built
    by `manage.py migrate` in it, its DATABASE_URL pointed at the template). Parallel pytest workers take turns
    through a file lock; the copy is made with SQLite's backup API, so that it is whole whatever the journal mode."""
    import fcntl
    import sqlite3

    folder = REPO / "var" / "test-sqlite"
    folder.mkdir(parents=True, exist_ok=True)
    template = folder / f"{migrations_digest()}.sqlite3"
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            for older in folder.glob("*.sqlite3*"):  # older sets of migrations, and an interrupted build
                older.unlink()
            building = folder / f"{template.stem}.building.sqlite3"
            migrated = subprocess.run(
                [sys.executable, str(REPO / "manage.py"), "migrate", "--no-input", "--verbosity", "0"],
                cwd=REPO,
                env={**env, "DATABASE_URL": f"sqlite:///{building}"},
                capture_output=True,
                text=True,
                check=False,
            )
            if migrated.returncode:
                raise RuntimeError(f"migrating the SQLite test template failed:\n{migrated.stdout}{migrated.stderr}")
            database = sqlite3.connect(building)
            database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            database.close()
            building.rename(template)
            for leftover in folder.glob(f"{building.name}-*"):  # its -wal and -shm files, emptied
                leftover.unlink()
        source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)  # under the lock: no rebuild removes it
        copy = sqlite3.connect(target)
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
