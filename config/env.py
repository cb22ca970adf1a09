"""Read settings from the environment; a malformed value stops start-up with a message naming the variable."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import overload
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@overload
def env_str(name: str, default: str) -> str: ...


@overload
def env_str(name: str, default: None = None) -> str | None: ...


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    items = [item.strip() for item in raw.split(",")]
    if not all(items):
        raise ImproperlyConfigured(f"{name}={raw!r} has an empty entry: give a comma-separated list.")
    return items


def database_from_url(name: str, default: str) -> dict:
    """Parse DATABASE_URL; only SQLite and PostgreSQL are supported."""
    import dj_database_url

    raw = os.environ.get(name) or default
    scheme = urlparse(raw).scheme
    if scheme not in {"sqlite", "postgres", "postgresql", "pgsql"}:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a database URL Concord supports: use sqlite:///PATH or postgres://USER@HOST:PORT/NAME."
        )
    try:
        config = dj_database_url.parse(raw, conn_max_age=60)
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise ImproperlyConfigured(f"{name}={raw!r} could not be parsed: {exc}") from None
    if scheme != "sqlite" and not config.get("NAME"):
        raise ImproperlyConfigured(f"{name}={raw!r} names no database: append /DBNAME.")
    return dict(config)


def broker_from_url(name: str) -> str | None:
    raw = os.environ.get(name)
    if not raw:
        return None
    parsed = urlparse(raw)
    if parsed.scheme not in {"redis", "rediss", "amqp", "pyamqp"} or not parsed.hostname:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a broker URL: use redis://HOST:PORT/DB.")
    return raw


SECRET_KEY_MIN_LENGTH = 50


def secret_key(name: str, *, key_file: Path, debug: bool) -> str:
    """SECRET_KEY from the environment, else the key kept in `key_file`, made once (mode 0600) on first use.

    With DEBUG off a key from the environment must pass Django's own deployment check (at least 50 characters, at
    least 5 different ones, not Django's 'django-insecure-' placeholder). The
    file is for the embedded default and for commands on a developer's machine; the production web server
    (`python -m config.web`) refuses to start without SECRET_KEY in its environment (see `config.web`).
    """
    raw = os.environ.get(name)
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
