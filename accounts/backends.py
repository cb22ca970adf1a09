"""django-axes' backend, for authentication that comes with a request.

Login attempts through the login page, the admin's login and `POST /api/auth/token/` carry the request, and so its
username and address, which the lockout counts. Authentication without a request (Django's test client `login()`,
a script calling `authenticate()`) has no address to count and passes on to the next backend rather than failing.
"""

from __future__ import annotations

import ipaddress
import logging
import re

from axes.backends import AxesStandaloneBackend
from django.conf import settings

logger = logging.getLogger(__name__)

# "1.2.3.4:5678" and "[2001:db8::1]:443" (some proxies write the client's port too), "[2001:db8::1]".
_WITH_PORT = re.compile(r"^(?:\[(?P<bracketed>[^\]]+)\](?::\d{1,5})?|(?P<ipv4>[0-9.]+):\d{1,5})$")
_UNREADABLE_LOGGED: set[str] = set()
_UNREADABLE_LOGGED_MAX = 1000  # a flood of distinct junk entries must not grow memory without bound


class AxesBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_address(request) -> str | None:
    """The address the login lockout counts (AXES_CLIENT_IP_CALLABLE).

    Directly reachable (TRUSTED_PROXY_COUNT=0, the default): the connection's address. Behind N reverse proxies that
    each append the address they saw to X-Forwarded-For: the N-th entry from the right, the last one a proxy of ours
    wrote; anything left of it was written by the client and cannot be trusted.
    """
    proxies = settings.CONCORD_TRUSTED_PROXY_COUNT
    if proxies:
        chain = [entry.strip() for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if entry.strip()]
        if len(chain) >= proxies:
            return forwarded_address(chain[-proxies])
    return request.META.get("REMOTE_ADDR")


def forwarded_address(entry: str) -> str | None:
    """The IP address in one X-Forwarded-For entry: a bare address, or one with its port (`1.2.3.4:5678`,
    `[2001:db8::1]:443`). Anything else is no address (the lockout then counts the attempt under none), logged once
    per distinct entry; it must never reach the lockout's address column, which would refuse it with a 500."""
    match = _WITH_PORT.match(entry)
    candidate = (match.group("bracketed") or match.group("ipv4")) if match else entry
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        if entry not in _UNREADABLE_LOGGED and len(_UNREADABLE_LOGGED) < _UNREADABLE_LOGGED_MAX:
            _UNREADABLE_LOGGED.add(entry)
            logger.warning(
                "X-Forwarded-For entry %r is not an IP address: the login attempt is counted without one", entry
            )
        return None
