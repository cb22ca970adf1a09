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
