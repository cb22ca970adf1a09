"""The annotator API's hot path stays at its measured statement count (benchmarks/README.md, "Annotation API"): with
a token, the token, its user and their roles are one statement, the next item one more, and a first save of a plain
item writes without reading anything twice; each save ends by bumping the pool's change stamp (one upsert), which
keys the report cache. A change that adds a query per request (an ORM relation loaded lazily, a
second roles lookup) fails here before it shows in the benchmark. Every save also writes its audit row (one INSERT,
docs/operations.md, "The audit trail"); the annotation's content type is read once per process and then cached."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation
from tests.annotation.factories import pool_for

NEXT = "/api/annotate/next/"
SUBMIT = "/api/annotations/"
TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")


def statements(captured) -> list[str]:
    return [
        q["sql"] for q in captured.captured_queries if not q["sql"].lstrip().upper().startswith(TRANSACTION_CONTROL)
    ]


@pytest.fixture
def client_with_token(annotator):
    ContentType.objects.get_for_model(Annotation)  # Django caches it for the process: no save reads it again
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator).key}")
    return client


@pytest.mark.django_db
def test_next_is_the_token_and_one_statement(client_with_token, annotator):
    pool_for(annotator, items=3)

    with CaptureQueriesContext(connection) as captured:
        response = client_with_token.get(NEXT)

    assert response.status_code == 200
    sql = statements(captured)
    assert len(sql) == 2, sql
    assert "authtoken_token" in sql[0] and "auth_group" in sql[0]  # roles read with the token


@pytest.mark.django_db
def test_a_first_save_is_the_token_a_locking_read_an_upsert_the_mark_the_audit_row_and_the_stamp(
    client_with_token, annotator
):
    _, items = pool_for(annotator, items=3)

    with CaptureQueriesContext(connection) as captured:
        response = client_with_token.post(SUBMIT, {"item": items[0].public_id, "label": "correct"}, format="json")

    assert response.status_code == 201, response.content
    assert len(statements(captured)) == 6, statements(captured)
    assert "auditlog_logentry" in statements(captured)[-2]
    assert "annotation_poolstamp" in statements(captured)[-1]


@pytest.mark.django_db
def test_a_second_save_also_reads_the_key_and_replaces_the_spans(client_with_token, annotator):
    _, items = pool_for(annotator, items=3)
    body = {"item": items[0].public_id, "label": "correct"}
    assert client_with_token.post(SUBMIT, body, format="json").status_code == 201

    with CaptureQueriesContext(connection) as captured:
        response = client_with_token.post(SUBMIT, {**body, "label": "misgendering"}, format="json")

    assert response.status_code == 200, response.content
    # token, lock, key, upsert, spans deleted (the old ones returned for the audit row), audit row, stamp
    assert len(statements(captured)) == 7, statements(captured)
