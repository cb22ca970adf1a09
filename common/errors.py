"""The services' refusals, and the one way each reaches a person.

A service that refuses a request for a reason the person can act on (bad input, a state that does not allow it, a
broker that is down) raises a `ServiceError`: its `status` is the HTTP answer and `body()` the API's JSON. Views do
not catch them one by one:

- the API: `api_exception_handler` (settings `REST_FRAMEWORK["EXCEPTION_HANDLER"]`) answers `body()` with `status`;
- a page that shows a form: `with refusal_on(form): ...` puts the message on the form, and the view renders it again;
- a page action that redirects: `with refusal_shown(request): ...` shows the message, and the view redirects as usual;
- any other page: the error reaches `config.errors.ServiceErrorPageMiddleware`, which answers its status with a page
  that says why.

Anything that is not a `ServiceError` is a bug: it stays a 500 and is logged as one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib import messages

if TYPE_CHECKING:
    from django import forms
    from django.http import HttpRequest
    from rest_framework.response import Response


class ServiceError(Exception):
    """A request the service refuses, for a reason the person who sent it can act on; nothing was written.

    Subclasses keep their builtin base as well (`class PoolSampleError(ServiceError, ValueError)`), so callers that
    catch that base (the management commands) go on working."""

    status: int = 400

    def body(self) -> dict[str, object]:
        """The API's JSON answer."""
        return {"detail": str(self)}

    def form_errors(self) -> list[tuple[str | None, str, str]]:
        """For the pages' forms: (the field it is about or None, the message on that field, the message on the
        form as a whole where the form has no such field)."""
        return [(None, str(self), str(self))]


class FieldError(ServiceError):
    """A refusal about one input field, whose message reads `FIELD: WHY`: the API answers `{FIELD: [WHY]}`, as a
    serializer's error; a form puts WHY on FIELD where the form has it, else the whole message on the form."""

    def parts(self) -> tuple[str, str]:
        field, _, why = str(self).partition(": ")
        return field, why

    def body(self) -> dict[str, object]:
        field, why = self.parts()
        return {field: [why]}

    def form_errors(self) -> list[tuple[str | None, str, str]]:
        field, why = self.parts()
        return [(field, why, str(self))]


class FieldErrors(ServiceError):
    """Refusals about several input fields: `errors` maps each field to what is wrong with it."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))

    def body(self) -> dict[str, object]:
        return {field: [message] for field, message in self.errors.items()}

    def form_errors(self) -> list[tuple[str | None, str, str]]:
        return [(field, message, message) for field, message in self.errors.items()]


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, and a `ServiceError` as its status and body (the transaction rolled back, as DRF does for
    its own errors). Anything else DRF does not know is left to Django: a 500, logged."""
    from rest_framework.response import Response
    from rest_framework.views import exception_handler, set_rollback

    if isinstance(exc, ServiceError):
        set_rollback()
        return Response(exc.body(), status=exc.status)
    return exception_handler(exc, context)


@dataclass
class Refusal:
    """What a `refusal_on` or `refusal_shown` block was refused with, if it was (for a view whose answer differs)."""

    error: ServiceError | None = None


Say = str | Callable[[str], str]  # "Not saved: {}." or a function of the message


def _said(say: Say, message: str) -> str:
    return say(message) if callable(say) else say.format(message)


@contextmanager
def refusal_on(form: forms.Form, *, say: Say = "{}") -> Iterator[Refusal]:
    """Run the block; a `ServiceError` in it becomes the form's errors (each on its field where the form has that
    field, else on the whole form, as `say` puts it). The view goes on after the block and renders the form again."""
    refusal = Refusal()
    try:
        yield refusal
    except ServiceError as exc:
        refusal.error = exc
        for field, on_field, on_form in exc.form_errors():
            if field is not None and field in form.fields:
                form.add_error(field, on_field)
            else:
                form.add_error(None, _said(say, on_form))


@contextmanager
def refusal_shown(request: HttpRequest, *, say: Say = "{}") -> Iterator[Refusal]:
    """Run the block; a `ServiceError` in it becomes an error message on the next page, as `say` puts it. The view
    goes on after the block, to the redirect it makes either way."""
    refusal = Refusal()
    try:
        yield refusal
    except ServiceError as exc:
        refusal.error = exc
        messages.error(request, _said(say, str(exc)))
