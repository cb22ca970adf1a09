"""django-axes' backend, for authentication that comes with a request.

Login attempts through the login page, the admin's login and `POST /api/auth/token/` carry the request, and so its
username and address, which the lockout counts. Authentication without a request (Django's test client `login()`,
a script calling `authenticate()`) has no address to count and passes on to the next backend rather than failing.
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings


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
            return chain[-proxies]
    return request.META.get("REMOTE_ADDR")
