"""Fixtures of the analysis tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def study_report(once, db):
    """The report of the hand-built study (tests/analysis/factories.py), built once per module."""
    from accounts.roles import ANNOTATOR
    from analysis.services import report_build
    from tests.analysis.factories import study_build
    from tests.conftest import _person

    return once(
        "study", lambda: report_build(pool=study_build(ana=_person("ana", ANNOTATOR), bo=_person("bo", ANNOTATOR)))
    )


@pytest.fixture
def page_without_figures(monkeypatch):
    """The standalone HTML page (`report_render(fmt="html")`) built without its figures, for tests that read only its
    tables and notes: drawing every figure as SVG and as PNG is most of what the page costs, and such a test checks
    none of it. The tables, notes and template are the page's own."""
    from analysis.report.exports import html

    monkeypatch.setattr(html, "report_figures_inline", lambda *, report: [])
