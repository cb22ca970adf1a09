"""A report's first build shows its progress: a browser opening a report that is not cached yet gets a page at once that builds it in the background and then opens it; a cached report, a script and `wait=1` get
the report itself."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from tests.analysis.factories import study_build

BROWSER = {"HTTP_SEC_FETCH_DEST": "document", "HTTP_SEC_FETCH_MODE": "navigate"}


@pytest.fixture
def study(annotator, second_annotator):
    return study_build(ana=annotator, bo=second_annotator)


def test_a_browser_sees_the_build_in_progress_then_the_cached_report(client, researcher, study):
    client.force_login(researcher)
    url = reverse("report-detail", args=[study.name])

    building = client.get(url, **BROWSER)
    page = building.content.decode()
    assert building.status_code == 200
    assert 'id="report-building"' in page and "<progress" in page and "js/report-building.js" in page
    assert "Accuracy per cell" not in page
    build_url = html.unescape(re.search(r'data-build-url="([^"]+)"', page).group(1))
    report_url = html.unescape(re.search(r'data-report-url="([^"]+)"', page).group(1))
    assert report_url == f"{url}?wait=1"

    assert client.get(build_url).status_code == 200  # builds and caches the report
    again = client.get(url, **BROWSER).content.decode()
    assert 'id="report-building"' not in again and "Accuracy per cell" in again
    assert "Accuracy per cell" in client.get(report_url, **BROWSER).content.decode()


def test_wait_builds_the_report_in_the_request(client, researcher, study):
    client.force_login(researcher)
    page = client.get(reverse("report-detail", args=[study.name]) + "?wait=1", **BROWSER).content.decode()
    assert "Accuracy per cell" in page and 'id="report-building"' not in page


def test_a_script_gets_the_report_itself(client, researcher, study):
    client.force_login(researcher)
    page = client.get(reverse("report-detail", args=[study.name])).content.decode()
    assert "Accuracy per cell" in page


@pytest.mark.parametrize("role", ["annotator", "outsider"])
def test_the_building_page_is_closed_to_other_roles(client, people, role, study):
    client.force_login(people[role])
    assert client.get(reverse("report-detail", args=[study.name]), **BROWSER).status_code == 403
