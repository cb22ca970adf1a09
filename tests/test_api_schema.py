"""The OpenAPI 3 schema at /api/schema/ covers every API endpoint, validates, and its Swagger UI at /api/docs/ is
served from local files under the Content-Security-Policy."""

from __future__ import annotations

import io
import re
import shutil

import pytest
import yaml
from django.core.management import call_command
from django.test import Client
from openapi_spec_validator import validate

from tests.conftest import PASSWORD
from tests.test_security import routes

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    """The schema as `manage.py spectacular --validate --fail-on-warn` writes it: any warning (a view whose shapes
    are not declared, clashing component names) fails here."""
    target = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target), stderr=io.StringIO())
    return yaml.safe_load(target.read_text())


def openapi_path(route: str) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)


def test_the_schema_is_valid_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    validate(schema)  # openapi-spec-validator, independently of drf-spectacular's own check


def test_the_schema_documents_every_api_endpoint_with_its_methods(schema):
    api_routes = {openapi_path(r) for r in routes() if r.startswith("api/") and r not in {"api/schema/", "api/docs/"}}
    assert api_routes <= set(schema["paths"]), sorted(api_routes - set(schema["paths"]))
    assert set(schema["paths"]["/api/generation-jobs/"]) == {"get", "post"}
    assert set(schema["paths"]["/api/annotations/"]) == {"post"}


def test_hand_built_responses_have_their_shapes(schema):
    components = schema["components"]["schemas"]
    item = components["AnnotatorItem"]["properties"]
    assert {"item", "context", "generation", "position", "total", "annotation"} <= set(item)
    assert "model" not in item and "heuristic_correct" not in item  # the blinded shape
    submit = schema["paths"]["/api/annotations/"]["post"]
    assert submit["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AnnotationRequest"
    }
    spans = components["AnnotationRequest"]["properties"]["extraneous_spans"]
    assert spans["items"] == {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
    assert set(submit["responses"]) == {"200", "201", "400", "401", "403", "404", "409", "422"}
    token = schema["paths"]["/api/auth/token/"]["post"]["responses"]["200"]["content"]["application/json"]
    assert set(components[token["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]) == {"token", "expires"}


def test_the_schema_names_token_and_session_authentication(schema):
    schemes = schema["components"]["securitySchemes"]
    assert schemes["tokenAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": 'Token-based authentication with required prefix "Token"',
    }
    assert "cookieAuth" in schemes
    assert schema["paths"]["/api/annotate/next/"]["get"]["security"] == [{"tokenAuth": []}, {"cookieAuth": []}]
    assert schema["paths"]["/api/auth/token/"]["post"].get("security") in (None, [], [{}])


@pytest.mark.django_db
def test_the_schema_and_docs_are_for_researchers_and_admins_not_annotators(annotator, researcher, admin_user):
    anonymous = Client()
    assert anonymous.get("/api/schema/").status_code == 401
    assert anonymous.get("/api/docs/").status_code == 401

    for person, status in ((annotator, 403), (researcher, 200), (admin_user, 200)):
        client = Client()
        client.force_login(person)
        response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        assert (response.status_code, client.get("/api/docs/").status_code) == (status, status), person.username
        if status == 200:
            assert "/api/annotate/next/" in response.json()["paths"]
        else:
            assert "is_gold" not in response.content.decode()


@pytest.mark.django_db
def test_the_docs_page_loads_swagger_ui_from_this_site_with_no_inline_code(researcher):
    client = Client()
    client.force_login(researcher)
    page = client.get("/api/docs/")
    html = page.content.decode()

    assert page.status_code == 200
    sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert sources and all(source.startswith("/") for source in sources), sources  # no CDN
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)  # every script is a file
    assert "<style" not in html
    fetched = {source: client.get(source) for source in sources}
    assert all(response.status_code == 200 for response in fetched.values()), fetched
    initialiser = [body(response) for source, response in fetched.items() if "sidecar" not in source]
    assert any(b"SwaggerUIBundle(" in text for text in initialiser)  # the page's own set-up, as a file


@pytest.mark.django_db
def test_the_docs_page_leads_back_to_concord(researcher):
    client = Client()
    client.force_login(researcher)
    html = client.get("/api/docs/").content.decode()

    assert re.search(r'<a[^>]+href="/"[^>]*>Back to Concord</a>', html)


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_swagger_ui_renders_the_operations_under_the_content_security_policy(live_server, researcher, browser):
    page = browser.new_page()
    page.set_default_timeout(15_000)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text))
    page.goto(f"{live_server.url}/login/?next=/api/docs/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("text=/api/annotate/next/")
    assert page.locator(".opblock").count() >= 10
    assert [text for text in violations if "Content Security Policy" in text] == []


def luminance(rgb: str) -> float:
    red, green, blue = (int(part) for part in re.findall(r"\d+", rgb)[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not shutil.which(CHROMIUM), reason="needs Chromium at /usr/bin/chromium")
def test_swagger_ui_follows_the_systems_dark_mode_and_its_bar_leads_home(live_server, researcher, browser):
    page = browser.new_page(color_scheme="dark")
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/login/?next=/api/docs/")
    page.fill("#id_username", "rui_researcher")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector(".opblock")
    background = page.evaluate("getComputedStyle(document.querySelector('.swagger-ui')).backgroundColor")
    text = page.evaluate("getComputedStyle(document.querySelector('.swagger-ui .info .title')).color")
    assert luminance(background) < 0.25 and luminance(text) > 0.6, (background, text)

    page.emulate_media(color_scheme="light")
    page.locator("html:not(.dark-mode)").wait_for(state="attached")
    text = page.evaluate("getComputedStyle(document.querySelector('.swagger-ui .info .title')).color")
    assert luminance(text) < 0.4, text

    page.click("text=Back to Concord")
    page.wait_for_url(lambda url: "/api/docs/" not in url)
    assert page.locator(".topbar .brand").inner_text() == "Concord"


def test_a_status_answered_in_the_tests_and_not_declared_is_named(schema):
    """The end-of-run check (tests/api_statuses.py): a status outside the operation's declared answers is named;
    a method the path does not list (a 405) is not an operation."""
    from tests.api_statuses import undeclared

    seen = {
        ("api/annotations/", "post", 201),
        ("api/annotations/", "post", 422),
        ("api/annotations/", "post", 418),
        ("api/annotations/", "put", 405),
        ("api/generation-jobs/<int:job_id>/", "get", 500),
    }
    assert undeclared(seen, schema) == ["POST /api/annotations/: 418", "GET /api/generation-jobs/{job_id}/: 500"]


@pytest.mark.django_db
def test_the_answers_of_api_views_are_recorded_for_that_check(annotator):
    from rest_framework.test import APIClient

    from tests.api_statuses import OBSERVED

    client = APIClient()
    client.force_authenticate(annotator)
    assert client.post("/api/annotations/", {"item": "nope", "label": "correct"}, format="json").status_code == 404
    assert ("api/annotations/", "post", 404) in OBSERVED
