"""Error pages: styled, with the site's navigation, and JSON under /api/ (users never see a debug or a bare page).

Django renders 400, 403, 404 and 500 through the handlers named in config/urls.py; a 405 is an empty
HttpResponseNotAllowed from `require_http_methods` and the class-based views, so a middleware gives it a page. A
service's refusal (`common.errors.ServiceError`) that a page lets through gets its status and a page saying why.
"""

from __future__ import annotations

import logging

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader

from common.errors import ServiceError

logger = logging.getLogger(__name__)

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Page not found",
    405: "Method not allowed",
    500: "Something went wrong",
}


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _page(request: HttpRequest, status: int, **context) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": TITLES[status]}, status=status)
    template = f"{status}.html" if status in TITLES else "400.html"  # a 409 or 503 refusal reads as a 400's page
    try:
        body = loader.render_to_string(template, {"status": status, **context}, request=request)
    except Exception:  # the page itself failed (a database that is down, say): a plain one is better than none
        logger.exception("the %s page could not be rendered", status)
        body = loader.render_to_string("error_plain.html", {"status": status, "title": TITLES.get(status, TITLES[400])})
    return HttpResponse(body, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # `BadRequest` is raised by our own views with a message for the user (a seed out of range, say); other 400s
    # (SuspiciousOperation and its kind) keep their details to the log.
    reason = str(exception) if type(exception) is BadRequest else ""
    if reason and _is_api(request):
        return JsonResponse({"detail": reason}, status=400)
    return _page(request, 400, reason=reason)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    # The role decorators say which role a page needs; nothing else from an exception is shown.
    reason = str(exception) if exception and str(exception).startswith("This page is for") else ""
    return _page(request, 403, reason=reason)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return _page(request, 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A stale form (the session ended, or the page was open across a restart): say so, and how to go on."""
    return _page(request, 403, reason="The form had expired. Go back, reload the page and try again.")


class MethodNotAllowedPageMiddleware:
    """Give an empty 405 a page (or a JSON body under /api/), keeping its Allow header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.method == "HEAD":
            return response
        allowed = response.get("Allow", "")
        page = _page(request, 405, allowed=allowed)
        if allowed:
            page["Allow"] = allowed
        return page


def _sentence(message: str) -> str:
    message = message.strip()
    return f"{message[:1].upper()}{message[1:]}{'' if message.endswith(('.', '?', '!')) else '.'}"


class ServiceErrorPageMiddleware:
    """A page view that lets a `ServiceError` through answers its status with a page that says why (the error's
    message as a sentence); under /api/, its JSON body. Any other exception is left to Django (a 500, logged)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ServiceError):
            return None
        if _is_api(request):
            return JsonResponse(exception.body(), status=exception.status)
        return _page(request, exception.status, reason=_sentence(str(exception)))
