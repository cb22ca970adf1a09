"""Read settings from the environment; a malformed value stops start-up with a message naming the variable."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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
    return config


def broker_from_url(name: str) -> str | None:
    raw = os.environ.get(name)
    if not raw:
        return None
    parsed = urlparse(raw)
    if parsed.scheme not in {"redis", "rediss", "amqp", "pyamqp"} or not parsed.hostname:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a broker URL: use redis://HOST:PORT/DB.")
    return raw
