"""A database connection dropped in the middle of a read (the server restarted, an administrator ended the session):
a GET is run again once on a new connection instead of answering 500; a write never is."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from annotation import selectors
from tests.annotation.factories import pool_for

NEXT = "/api/annotate/next/"

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the retry needs a connection outside any test transaction
    pytest.mark.skipif(settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"), reason="ends a PostgreSQL session"),
]


@pytest.fixture(autouse=True)
def _a_fresh_connection_after_each_test():
    """A session this test ended is not handed to the test's teardown (it flushes the tables)."""
    yield
    connection.close()


def drop_the_connection_on_the_first_call(monkeypatch, module, name: str) -> list[int]:
    """`module.name`, whose first call ends its own database session (PostgreSQL answers AdminShutdown)."""
    original, calls = getattr(module, name), []

    def dropped_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, dropped_once)
    return calls


def test_a_read_whose_connection_drops_is_answered_from_a_second_try(api, annotator, monkeypatch):
    _, items = pool_for(annotator, items=2)
    calls = drop_the_connection_on_the_first_call(monkeypatch, selectors, "assignment_next")
    api.force_authenticate(annotator)

    response = api.get(NEXT)

    assert response.status_code == 200
    assert response.json()["item"] == items[0].public_id
    assert len(calls) == 2


def test_a_read_is_tried_twice_at_most(api, annotator, monkeypatch):
    pool_for(annotator, items=1)

    def always_dropped(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    monkeypatch.setattr(selectors, "assignment_next", always_dropped)
    api.force_authenticate(annotator)
    api.raise_request_exception = False

    assert api.get(NEXT).status_code == 500


def test_a_write_whose_connection_drops_is_not_tried_again(api, annotator, monkeypatch):
    from annotation import apis

    _, [item] = pool_for(annotator, items=1)
    calls = drop_the_connection_on_the_first_call(monkeypatch, apis, "annotation_submit")
    api.force_authenticate(annotator)
    api.raise_request_exception = False

    response = api.post("/api/annotations/", {"item": item.public_id, "label": "correct"}, format="json")

    assert response.status_code == 500
    assert len(calls) == 1
