"""Read settings from the environment with django-environ; a malformed value stops start-up naming the variable.

`env` is django-environ's `Env`, made strict: django-environ reads any unknown word as a false boolean and an empty
list entry as a host named "", which would start a server configured other than its operator meant. Here each reader
(`env.bool`, `env.int`, `env.list`, `env.db_url`, `env.str`) checks the raw value first and raises
ImproperlyConfigured with the variable's name and value.
"""

from __future__ import annotations

import builtins
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import environ
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_DATABASE_SCHEMES = {"sqlite", "postgres", "postgresql", "pgsql"}
_BROKER_SCHEMES = {"redis", "rediss", "amqp", "pyamqp"}
# A kept connection lives 60 s (settings.py turns on its health check before each reuse).
CONN_MAX_AGE = 60


class StrictEnv(environ.Env):
    """django-environ's reader that refuses what it would otherwise guess at."""

    def raw(self, var: builtins.str) -> builtins.str | None:
        return self.ENVIRON.get(var)

    def str(
        self,
        var: builtins.str,
        default: Any = environ.Env.NOTSET,
        multiline: builtins.bool = False,
        choices: Any = environ.Env.NOTSET,
    ) -> Any:  # type: ignore[override]
        """The value as written: django-environ would read a leading `$` as the name of another variable."""
        raw = self.raw(var)
        if raw is None:
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"{var} is not set.")
            return default
        return raw

    def bool(self, var: builtins.str, default: Any = environ.Env.NOTSET) -> builtins.bool:  # type: ignore[override]
        raw = self.raw(var)
        if raw is not None and raw.strip().lower() not in _TRUE | _FALSE:
            raise ImproperlyConfigured(f"{var}={raw!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off.")
        if raw is not None and not raw.strip():
            return False  # django-environ reads "" as its default; an empty value has always meant off here
        return super().bool(var, default=default)

    def int(
        self, var: builtins.str, default: Any = environ.Env.NOTSET, *, minimum: builtins.int | None = None
    ) -> builtins.int:  # type: ignore[override]
        raw = self.raw(var)
        try:
            value = super().int(var, default=default)
        except ValueError:
            raise ImproperlyConfigured(f"{var}={raw!r} is not an integer.") from None
        if raw is not None and minimum is not None and value < minimum:
            raise ImproperlyConfigured(f"{var}={raw!r} must be at least {minimum}.")
        return value

    def list(self, var: builtins.str, cast: Any = None, default: Any = environ.Env.NOTSET) -> builtins.list:  # type: ignore[override]
        raw = self.raw(var)
        items = super().list(var, cast=cast, default=default)
        if raw is not None and not all(str(item).strip() for item in raw.split(",")):
            raise ImproperlyConfigured(f"{var}={raw!r} has an empty entry: give a comma-separated list.")
        return [item.strip() if isinstance(item, builtins.str) else item for item in items]

    def db_url(
        self, var: builtins.str = "DATABASE_URL", default: Any = environ.Env.NOTSET, engine: Any = None
    ) -> builtins.dict:  # type: ignore[override]
        """DATABASE_URL as Django's DATABASES entry; only SQLite and PostgreSQL are supported."""
        raw = self.raw(var) or default
        scheme = urlparse(raw).scheme
        if scheme not in _DATABASE_SCHEMES:
            raise ImproperlyConfigured(
                f"{var}={raw!r} is not a database URL Concord supports: use sqlite:///PATH or postgres://USER@HOST:PORT/NAME."
            )
        try:
            config = self.db_url_config(raw, engine=engine)
        except Exception as exc:  # django-environ raises several types for bad URLs
            raise ImproperlyConfigured(f"{var}={raw!r} could not be parsed: {exc}") from None
        if scheme != "sqlite" and not config.get("NAME"):
            raise ImproperlyConfigured(f"{var}={raw!r} names no database: append /DBNAME.")
        if config.get("NAME") != ":memory:":
            config["CONN_MAX_AGE"] = CONN_MAX_AGE
        return dict(config)

    def broker_url(self, var: builtins.str) -> builtins.str | None:
        """A Celery broker URL, or None when the variable is unset or empty (tasks then run in-process)."""
        raw = self.str(var, default="")
        if not raw:
            return None
        parsed = urlparse(raw)
        if parsed.scheme not in _BROKER_SCHEMES or not parsed.hostname:
            raise ImproperlyConfigured(f"{var}={raw!r} is not a broker URL: use redis://HOST:PORT/DB.")
        return raw


env = StrictEnv()

SECRET_KEY_MIN_LENGTH = 50


def secret_key(name: str, *, key_file: Path, debug: bool) -> str:
    """SECRET_KEY from the environment, else the key kept in `key_file`, made once (mode 0600) on first use.

    With DEBUG off a key from the environment must pass Django's own deployment check (at least 50 characters, at
    least 5 different ones, not Django's 'django-insecure-' placeholder). The
    file is for the embedded default and for commands on a developer's machine; the production web server
    (`python -m config.web`) refuses to start without SECRET_KEY in its environment (see `config.web`).
    """
    raw = env.raw(name)
    if raw is not None:
        if not debug and len(raw) < SECRET_KEY_MIN_LENGTH:
            raise ImproperlyConfigured(
                f"{name} has {len(raw)} characters; with DEBUG off it must have at least {SECRET_KEY_MIN_LENGTH}: "
                'python -c "import secrets; print(secrets.token_urlsafe(50))"'
            )
        if not debug and (len(set(raw)) < 5 or raw.startswith("django-insecure-")):
            raise ImproperlyConfigured(
                f"{name} is not random enough: with DEBUG off it needs at least 5 different characters and no "
                "'django-insecure-' prefix."
            )
        if not raw.strip():
            raise ImproperlyConfigured(f"{name} is empty.")
        return raw
    try:
        return _key_file_read_or_create(key_file)
    except OSError as exc:
        raise ImproperlyConfigured(
            f"{name} is not set and the key file {key_file} could not be made or read ({exc.strerror}): set {name}."
        ) from None


def _key_file_read_or_create(key_file: Path) -> str:
    """Read the key file; when there is none, write a new key beside it and link it into place.

    The link is atomic and fails when another process made the file first, so processes that start together all end
    up with the same key, and nobody ever reads a half-written file.
    """
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=key_file.parent, prefix=".secret_key.")  # mode 0600
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(64))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, key_file)
            except FileExistsError:
                pass
        finally:
            os.unlink(temporary)
    key = key_file.read_text().strip()
    if len(key) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"the key file {key_file} holds a key of {len(key)} characters: delete it to have a new one made."
        )
    return key
