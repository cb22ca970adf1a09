"""The Content-Security-Policy middleware builds its headers once (config/csp.py); they must be django-csp's own."""

import pytest
from csp.constants import NONCE
from csp.decorators import csp_exempt, csp_update
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from config.csp import CSPMiddleware

REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'none'"], "report-uri": "/csp-report/"}}


def answered(middleware_class, view, path="/annotate/"):
    request = RequestFactory().get(path)
    middleware = middleware_class(view)
    middleware.process_request(request)
    return middleware.process_response(request, view(request))


def headers(response):
    return {name: response.get(name) for name in ("Content-Security-Policy", "Content-Security-Policy-Report-Only")}


def plain(request):
    return HttpResponse("ok")


def test_it_writes_the_headers_django_csp_writes():
    assert headers(answered(CSPMiddleware, plain)) == headers(answered(DjangoCSPMiddleware, plain))
    assert "script-src 'self'" in answered(CSPMiddleware, plain)["Content-Security-Policy"]


def test_it_follows_a_change_of_the_settings():
    answered(CSPMiddleware, plain)  # built and kept

    with override_settings(CONTENT_SECURITY_POLICY_REPORT_ONLY=REPORT_ONLY):
        ours, theirs = answered(CSPMiddleware, plain), answered(DjangoCSPMiddleware, plain)
        assert headers(ours) == headers(theirs)
        assert "report-uri /csp-report/" in ours["Content-Security-Policy-Report-Only"]

    assert answered(CSPMiddleware, plain).get("Content-Security-Policy-Report-Only") is None


@pytest.mark.parametrize(
    "view",
    [csp_update({"img-src": ["https://example.org"]})(plain), csp_exempt()(plain)],
    ids=["updated", "exempt"],
)
def test_a_view_with_its_own_policy_gets_django_csps_answer(view):
    assert headers(answered(CSPMiddleware, view)) == headers(answered(DjangoCSPMiddleware, view))


@override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"script-src": ["'self'", NONCE]}})
def test_a_nonce_asked_for_is_in_the_header():
    def with_nonce(request):
        return HttpResponse(str(request.csp_nonce))

    response = answered(CSPMiddleware, with_nonce)

    assert f"'nonce-{response.content.decode()}'" in response["Content-Security-Policy"]


def test_a_nonce_asked_for_after_the_header_is_written_is_an_error():
    request = RequestFactory().get("/")
    middleware = CSPMiddleware(plain)
    middleware.process_request(request)
    middleware.process_response(request, plain(request))

    with pytest.raises(Exception, match="csp_nonce"):
        str(request.csp_nonce)
