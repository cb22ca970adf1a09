"""Fixtures of the analysis tests."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="module")
def once(django_db_setup, django_db_blocker):
    """`once(key, build)`: what `build()` returns, built once per module and key, handed to each test as its own copy.

    For tests that only read a built report: the build runs in a transaction rolled back at once (and the report
    cache is emptied after it), so every test's database and cache start as they would without it. The fixture that
    calls it also asks for `db`, so that pytest-django sets the test database up even for a run of only such tests.
    """
    from django.core.cache import cache
    from django.db import transaction

    made: dict[str, object] = {}

    def get(key: str, build):
        if key not in made:
            with django_db_blocker.unblock(), transaction.atomic():
                made[key] = build()
                transaction.set_rollback(True)
            cache.clear()
        return copy.deepcopy(made[key])

    return get
