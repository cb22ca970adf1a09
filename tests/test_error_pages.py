"""Error pages: 400, 403, 404, 405 and 500 are styled pages with the navigation (JSON under /api/), never a debug page."""

from __future__ import annotations

import pytest
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from django.urls import path

import config.urls


def _boom(request):
    raise RuntimeError("a bug")


def _suspicious(request):
    raise SuspiciousOperation("a forged header")


# This module is also the URLconf of the tests that need a failing view: the site's patterns, plus two that fail.
urlpatterns = [*config.urls.urlpatterns, path("boom/", _boom), path("suspicious/", _suspicious)]
handler400 = config.urls.handler400
handler403 = config.urls.handler403
handler404 = config.urls.handler404
handler500 = config.urls.handler500


@pytest.fixture
def browser_client():
    return Client(raise_request_exception=False)


def test_it_answers_an_unknown_address_with_the_styled_404_and_the_navigation(browser_client, researcher):
    browser_client.force_login(researcher)
    response = browser_client.get("/no/such/page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "There is nothing at this address" in page
    assert 'aria-label="Main"' in page and 'href="/pools/"' in page  # the navigation, by role
    assert "Traceback" not in page


def test_it_answers_an_unknown_api_address_with_json(browser_client, researcher):
    browser_client.force_login(researcher)
    response = browser_client.get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Page not found"}


def test_it_tells_an_annotator_which_role_a_researcher_page_needs(browser_client, annotator):
    browser_client.force_login(annotator)
    response = browser_client.get("/pools/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "This page is not open to you" in page
    assert "This page is for the researcher role." in page
    assert 'href="/annotate/"' in page  # the annotator's own way back


def test_it_gives_an_unanswered_method_the_styled_405_and_keeps_the_allow_header(browser_client, researcher):
    browser_client.force_login(researcher)
    response = browser_client.get("/logout/")  # logging out is a POST
    assert response.status_code == 405
    assert "POST" in response["Allow"]
    page = response.content.decode()
    assert "This page does not answer that kind of request" in page
    assert f"It answers {response['Allow']}." in page


def test_it_leaves_the_apis_own_405_json_alone(researcher):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(researcher)
    response = api.delete("/api/annotate/next/")
    assert response.status_code in (403, 405)
    assert response["Content-Type"].startswith("application/json")


@pytest.mark.urls("tests.test_error_pages")
def test_it_answers_a_crash_with_the_styled_500_and_the_navigation(browser_client, researcher):
    browser_client.force_login(researcher)
    response = browser_client.get("/boom/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page
    assert 'href="/pools/"' in page
    assert "a bug" not in page and "Traceback" not in page


@pytest.mark.urls("tests.test_error_pages")
def test_it_answers_a_bad_request_with_the_styled_400(browser_client):
    response = browser_client.get("/suspicious/")
    assert response.status_code == 400
    page = response.content.decode()
    assert "That request could not be read" in page
    assert "forged" not in page


def test_it_explains_an_expired_form_instead_of_a_bare_csrf_failure(csrf_client, annotator):
    csrf_client.force_login(annotator)
    response = csrf_client.post("/logout/")  # no CSRF token, as a form left open across a restart sends
    assert response.status_code == 403
    page = response.content.decode()
    assert "The form had expired" in page
    assert 'aria-label="Main"' in page
