"""A read whose database connection dropped mid-request is tried once more (one GET in about 1,000 met
a PostgreSQL session ended under it, `AdminShutdown`, and answered 500).

`RetryReadMiddleware.process_exception` sees the exception a view raised. When the request is a read (GET, HEAD,
OPTIONS), the exception is a database OperationalError or InterfaceError, the connection it came from no longer works,
and no transaction is open around the view (ATOMIC_REQUESTS is off; a view's own `atomic` blocks have rolled back by
then), it closes the dead connection and runs the view again, once; Django connects afresh on the first query. A
write is never tried again: whether its transaction committed before the connection dropped is unknown to us, and
the annotation save has its idempotency key for a client to retry with. Other database errors (SQLite's "database is
locked", a query error) leave the connection usable and are not retried.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest

logger = logging.getLogger(__name__)

READS = ("GET", "HEAD", "OPTIONS")
_RETRIED = "_concord_read_retried"


def _dropped() -> bool:
    """Whether a connection of this request died (its socket closed, or a check query fails), with none in a
    transaction that a retry would run outside of."""
    dropped = False
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            return False
        raw = connection.connection
        if raw is not None and not connection.is_usable():
            dropped = True
    return dropped


class RetryReadMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if (
            request.method not in READS
            or not isinstance(exception, OperationalError | InterfaceError)
            or getattr(request, _RETRIED, False)
            or request.resolver_match is None
            or not _dropped()
        ):
            return None
        setattr(request, _RETRIED, True)
        logger.warning(
            "%s %s: the database connection dropped (%s); trying once more", request.method, request.path, exception
        )
        for connection in connections.all(initialized_only=True):
            connection.close()
        match = request.resolver_match
        return match.func(request, *match.args, **match.kwargs)
