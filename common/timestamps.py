"""The times Concord stores from a user's file (docs/domain.md, "Input that every reader can read"): each must be
one that every reader of the stored row can hold.

PostgreSQL keeps a `timestamptz` from 4713 BC, but the readers of a pool's rows do not: psycopg refuses to load a
time before Python's year 1 in UTC (`timestamp too small`: every page and export of the pool would answer 500 for
good), Python cannot convert `9999-12-31T23:59:59-12:00` to UTC at all (OverflowError), and a time shown in a zone
ahead of UTC must stay within year 9999. So a stored time lies between 1900-01-01 and 9998-12-31 (UTC), a day clear
of every such edge in any time zone; pandas 3 (microseconds) and SQLite hold every time in it.
"""

from __future__ import annotations

from datetime import UTC, datetime

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
RANGE = "between 1900-01-01 and 9998-12-31 (UTC)"


def timestamp_problem(value: datetime) -> str | None:
    """What keeps the time (with a zone; one without is read as UTC) from being stored, or None."""
    try:
        utc = value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    except (OverflowError, ValueError):
        return f"must be {RANGE}"
    if not EARLIEST <= utc <= LATEST:
        return f"must be {RANGE}"
    return None
