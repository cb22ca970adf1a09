"""Fixtures of the analysis tests."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="module")
def once():
    """`once(key, build)`: what `build()` returns, built once per module and key, handed to each test as its own copy.

    For tests that only read a built report. The fixture that calls it asks for `db` (so pytest-django sets the test
    database up even for a run of only such tests); the build runs inside that test's transaction, in a savepoint
    rolled back at once, and the report cache is emptied after it, so every test's database and cache start as they
    would without it.
    """
    from django.core.cache import cache
    from django.db import transaction

    made: dict[str, object] = {}

    def get(key: str, build):
        if key not in made:
            with transaction.atomic():
                made[key] = build()
                transaction.set_rollback(True)
            cache.clear()
        return copy.deepcopy(made[key])

    return get


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
