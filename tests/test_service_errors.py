"""A service's refusal reaches a person one way: the API's exception handler answers its status and JSON body, a page
puts it on the form or in the next page's messages, or answers a 4xx page saying why. Anything else stays a 500."""

from __future__ import annotations

import logging

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.test import Client, RequestFactory
from django.urls import path
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

import config.urls
from accounts.projects import ProjectError
from annotation.selectors import QualificationFailed
from annotation.selectors.aggregate import AggregationError
from annotation.services import AnnotationRejected, IdempotencyConflict, PoolSampleError
from annotation.services.label_files import LabelImportError
from annotation.services.pool import PoolCreateError
from annotation.services.preview import UploadOptionsError
from common.errors import ServiceError, refusal_on, refusal_shown
from generation.jobs.runner import JobDispatchError
from generation.jobs.services import JobStateError
from generation.parameters import JobParameterError

FAILED = {"status": "failed", "correct": 1, "total": 4, "score": 0.25, "pass_mark": 0.8}

# Each refusal, and the answer the API gave for it when each view caught it by hand.
ANSWERS = [
    (PoolSampleError("cell x has 2 of 5 instances"), 400, {"detail": "cell x has 2 of 5 instances"}),
    (ProjectError("no project 'x' of yours"), 400, {"project": ["no project 'x' of yours"]}),
    (PoolCreateError("name: a pool named 'p' already exists"), 400, {"name": ["a pool named 'p' already exists"]}),
    (UploadOptionsError("scale: use one of nominal"), 400, {"detail": "scale: use one of nominal", "errors": []}),
    (
        LabelImportError(["a.csv:2: no item 'x'", "a.csv:3: no item 'y'"]),
        400,
        {"detail": "import failed, nothing was written", "errors": ["a.csv:2: no item 'x'", "a.csv:3: no item 'y'"]},
    ),
    (
        JobParameterError({"samples": "at most 100", "top_p": "between 0 and 1"}),
        400,
        {"samples": ["at most 100"], "top_p": ["between 0 and 1"]},
    ),
    (
        JobDispatchError("the broker is down", job_id=7),
        503,
        {"detail": "the broker is down", "job": 7, "resumable": True},
    ),
    (
        JobStateError("job 7 is done; only queued or running jobs can be cancelled"),
        409,
        {"detail": "job 7 is done; only queued or running jobs can be cancelled"},
    ),  # fmt: skip
    (
        AnnotationRejected("span 0 is out of range", field="extraneous_spans"),
        400,
        {"detail": "span 0 is out of range", "field": "extraneous_spans"},
    ),  # fmt: skip
    (AnnotationRejected("the item is gone", status=410), 410, {"detail": "the item is gone", "field": None}),
    (
        IdempotencyConflict("another answer", conflicts=["label"]),
        422,
        {"detail": "another answer", "field": "idempotency_key", "conflicts": ["label"]},
    ),  # fmt: skip
    (AggregationError("pool 'P': no item has two ratings"), 400, {"human": ["Pool 'P': no item has two ratings."]}),
]


class _Raising(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    error: Exception = RuntimeError("a bug")

    def get(self, request):
        raise self.error


@pytest.mark.parametrize(("error", "status", "body"), ANSWERS, ids=lambda value: type(value).__name__)
def test_it_answers_each_refusal_on_the_api_with_its_status_and_body(error, status, body):
    response = _Raising.as_view(error=error)(APIRequestFactory().get("/api/x/"))
    assert response.status_code == status
    assert response.data == body


def test_it_answers_the_qualification_refusal_with_403_and_the_annotators_qualification():
    response = _Raising.as_view(error=QualificationFailed(FAILED))(APIRequestFactory().get("/api/x/"))
    assert response.status_code == 403
    assert response.data["qualification"] == FAILED
    assert response.data["detail"].startswith("You labelled 1 of the 4 training items as expected (25%)")


@pytest.mark.parametrize("error", [RuntimeError("a bug"), ValueError("a bug"), KeyError("a bug")])
def test_it_leaves_any_other_exception_on_the_api_to_django(error):
    with pytest.raises(type(error)):  # DRF raises it again: Django answers 500 and logs it
        _Raising.as_view(error=error)(APIRequestFactory().get("/api/x/"))


def test_it_keeps_the_builtin_base_each_refusal_had_for_the_commands_that_catch_it():
    assert all(isinstance(error, ServiceError) for error, _, _ in ANSWERS)
    assert isinstance(JobDispatchError("down", job_id=1), RuntimeError)
    assert isinstance(QualificationFailed(FAILED), PermissionError)
    assert isinstance(PoolSampleError("x"), ValueError) and isinstance(LabelImportError(["x"]), ValueError)


class _Form(forms.Form):
    name = forms.CharField()
    samples = forms.IntegerField()


def _form() -> _Form:
    form = _Form({"name": "p", "samples": "3"})
    assert form.is_valid()
    return form


def test_it_puts_a_refusal_on_the_field_it_names_and_the_rest_on_the_form():
    form = _form()
    with refusal_on(form) as refused:
        raise JobParameterError({"samples": "at most 100", "model": "no model 'x'"})
    assert isinstance(refused.error, JobParameterError)
    assert form.errors == {"samples": ["at most 100"], "__all__": ["no model 'x'"]}
    form = _form()
    with refusal_on(form):
        raise PoolCreateError("name: a pool named 'p' already exists")
    assert form.errors == {"name": ["a pool named 'p' already exists"]}
    form = _form()
    with refusal_on(form):
        raise PoolCreateError("labels: give two labels")  # no such field on this form: the whole message
    assert form.errors == {"__all__": ["labels: give two labels"]}


def test_it_says_a_refusal_on_the_form_as_the_view_asks_and_lists_each_file_problem():
    form = _form()
    with refusal_on(form, say="Import failed, nothing was written: {}."):
        raise PoolSampleError("cell x is short")
    assert form.errors == {"__all__": ["Import failed, nothing was written: cell x is short."]}
    form = _form()
    with refusal_on(form):
        raise LabelImportError([f"a.csv:{line}: bad" for line in range(2, 30)])
    assert form.errors["__all__"] == [f"a.csv:{line}: bad" for line in range(2, 22)]  # the first 20


def test_it_runs_the_block_to_its_end_when_nothing_is_refused():
    form = _form()
    with refusal_on(form) as refused:
        done = True
    assert done and refused.error is None and form.errors == {}


def test_it_shows_a_refusal_in_the_next_pages_messages():
    request = RequestFactory().post("/x/")
    request._messages = CookieStorage(request)
    with refusal_shown(request, say="Not saved: {}.") as refused:
        raise JobStateError("job 3 is done")
    assert isinstance(refused.error, JobStateError)
    assert [str(message) for message in get_messages(request)] == ["Not saved: job 3 is done."]


@pytest.mark.parametrize("block", [refusal_on, refusal_shown])
def test_it_lets_any_other_exception_out_of_a_page_block(block):
    request = RequestFactory().post("/x/")
    request._messages = CookieStorage(request)
    with pytest.raises(ValueError, match="a bug"), block(_form() if block is refusal_on else request):
        raise ValueError("a bug")
    assert list(get_messages(request)) == []


def _refused(request):
    raise JobStateError("job 3 was cancelled; a cancelled job is never resumed")


def _unavailable(request):
    raise JobDispatchError("the broker is down", job_id=3)


def _bug(request):
    raise ValueError("a bug")


# This module is also the URLconf of the tests that need pages that raise.
urlpatterns = [
    *config.urls.urlpatterns,
    path("refused/", _refused),
    path("unavailable/", _unavailable),
    path("bug/", _bug),
    path("api/refused/", _refused),
]
handler400 = config.urls.handler400
handler403 = config.urls.handler403
handler404 = config.urls.handler404
handler500 = config.urls.handler500


@pytest.mark.urls("tests.test_service_errors")
def test_it_answers_a_refusal_a_page_lets_through_with_its_status_and_why(db):
    response = Client().get("/refused/")
    assert response.status_code == 409
    assert "Job 3 was cancelled; a cancelled job is never resumed." in response.content.decode()
    response = Client().get("/unavailable/")
    assert response.status_code == 503
    assert "The broker is down." in response.content.decode()
    response = Client().get("/api/refused/")  # a plain view under /api/: the API's body
    assert response.status_code == 409
    assert response.json() == {"detail": "job 3 was cancelled; a cancelled job is never resumed"}


@pytest.mark.urls("tests.test_service_errors")
def test_it_answers_a_bug_in_a_page_with_500_and_logs_it(db, caplog):
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = Client(raise_request_exception=False).get("/bug/")
    assert response.status_code == 500
    assert "a bug" not in response.content.decode()
    assert any(record.exc_info and record.exc_info[0] is ValueError for record in caplog.records)
