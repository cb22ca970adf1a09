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


@pytest.fixture(scope="module")
def built_study(module_db) -> int:
    """The hand-built study (tests/analysis/factories.py), built once for a module of plain `db` tests that ask for
    `module_study`: the pool's id. Each test's own writes to it roll back at the test's end."""
    from accounts.roles import ANNOTATOR
    from tests.analysis.factories import study_build
    from tests.conftest import _person

    with module_db():
        return study_build(ana=_person("ana", ANNOTATOR), bo=_person("bo", ANNOTATOR)).pk


@pytest.fixture
def module_study(db, built_study):
    """The module's hand-built study, its pool read afresh for each test: a change a test makes to the object in
    memory does not reach the next test."""
    from annotation.models import Pool

    return Pool.objects.get(pk=built_study)
