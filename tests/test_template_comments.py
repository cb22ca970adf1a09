"""No page shows a template comment as text: Django's `{# #}` ends at the end of its line, so one that runs over two
lines is printed as it stands (`{% comment %}` is the multi-line form). Every template is scanned, and every page the
demo's admin, researcher and annotator reach by following links from the home page is rendered and read."""

from __future__ import annotations

import re
from collections import deque

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, modify_settings
from django.urls import Resolver404, resolve

from tests.conftest import REPO

# Links are followed on the site only; not the admin site (Django's own templates), the API's browsable pages,
# static files or logging out. Downloads are fetched but only HTML is read.
SKIPPED = re.compile(r"^/(admin|api|static|logout)/")
HREF = re.compile(r'href="(/[^"#]*)"')
PER_ROUTE = 2  # pages of one URL pattern (an item, a report) share their templates: two of each is enough


def _template_files():
    roots = [REPO / "templates", *(path for path in REPO.glob("*/templates") if path.parent.name != ".venv")]
    return sorted(path for root in roots for path in root.rglob("*.html"))


def test_it_has_no_template_comment_that_runs_over_a_line():
    unclosed = [
        f"{path.relative_to(REPO)}:{number}"
        for path in _template_files()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if line.count("{#") != line.count("#}")
    ]
    assert _template_files() and not unclosed, unclosed


def test_the_scan_catches_a_comment_over_two_lines(tmp_path):
    from django.template import engines

    rendered = engines["django"].from_string("<p>{# one line #}a</p>\n{# two\nlines #}<p>b</p>").render({})
    assert "one line" not in rendered and "{#" in rendered and "#}" in rendered  # what the scan above keeps out


def _crawl(client: Client) -> dict[str, str]:
    """Every page reachable from the home page by the client's links, PER_ROUTE of each URL pattern (the query string
    apart): {path: the page's HTML}."""
    pages: dict[str, str] = {}
    seen = {"/"}
    per_route: dict[str, int] = {}
    queue = deque(["/"])
    while queue:
        path = queue.popleft()
        try:
            route = resolve(path.split("?")[0]).route
        except Resolver404:
            continue
        per_route[route] = per_route.get(route, 0) + 1
        if per_route[route] > PER_ROUTE:
            continue
        response = client.get(path, follow=True)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        pages[path] = html
        for link in HREF.findall(html):
            link = link.replace("&amp;", "&")
            if link not in seen and not SKIPPED.match(link):
                seen.add(link)
                queue.append(link)
    return pages


@pytest.fixture
def demo_loaded(settings, tmp_path, db):
    settings.DEMO_LOGINS_FILE = tmp_path / "demo-logins.json"
    if apps.is_installed("demo"):
        call_command("load_demo", "--no-generate", verbosity=0)
        yield
        return
    with modify_settings(INSTALLED_APPS={"append": "demo"}):
        call_command("load_demo", "--no-generate", verbosity=0)
        yield


@pytest.mark.slow  # loads the whole demo (10-30 s) and renders some 50 pages
def test_no_page_a_role_reaches_shows_a_template_comment(demo_loaded):
    for username in ("admin", "researcher", "annotator1"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        pages = _crawl(client)
        shown = {
            path: html[max(0, html.find(mark) - 80) : html.find(mark) + 80]
            for path, html in pages.items()
            for mark in ("{#", "#}")
            if mark in html
        }
        assert not shown, (username, shown)
        # The crawl reached the role's pages; an annotator's include the annotation page (where the comment was shown).
        assert len(pages) > (3 if username == "annotator1" else 10), (username, sorted(pages))
        if username == "annotator1":
            assert any(path.startswith("/annotate/") for path in pages), sorted(pages)
