"""Sending a chunk's requests to an endpoint, each once (docs/domain.md, 'Models behind an endpoint').

A request (`Call`) is identified by its endpoint, model, route, exact body (messages or prompt and parameters), sample
index and seed; the sha256 of that identity is its `EndpointReply.key`. `calls_send` looks every key up first and
sends only the requests whose reply is not stored, up to the endpoint's concurrency at once and within its requests
per minute; each reply is stored as it arrives (by the calling thread, in its own transaction), before any label or
text is made from it, so that a worker killed mid-chunk loses no reply and a resumed chunk, or a second identical run,
sends none of them again.

A 429, a 5xx, a timeout, a dropped connection or a body that is not JSON is retried with exponential backoff
(`CONCORD_ENDPOINT_BACKOFF_SECONDS` doubling, at most 60 s), or after the endpoint's `Retry-After` when it gives one,
at most the endpoint's `max_retries` times; then `EndpointFailed` with the endpoint's own message (the chunk fails
and the job can be resumed). Any other answer (400, 401, 404) fails at once.

The API key is read from the environment variable the endpoint names, when a request is sent; it is never stored,
logged or put into an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

RETRY_AFTER_MAX = 300.0
BACKOFF_MAX = 60.0


class EndpointFailed(RuntimeError):
    """An endpoint did not answer a request within its retries, or refused it; the message is the endpoint's."""


@dataclass(frozen=True)
class Target:
    """Where and how to call a model: a `ModelEndpoint` row's settings, read once per chunk."""

    model_id: int  # the LanguageModel's id
    name: str
    model: str  # the model's id at the endpoint
    base_url: str
    api: str
    api_key_env: str = ""
    concurrency: int = 4
    rpm: int | None = None
    timeout: float = 60.0
    max_retries: int = 5
    completions: bool = True
    has_logprobs: bool = False
    prompt_logprobs: bool = False
    structured: bool = False
    price_in: float | None = None
    price_out: float | None = None
    job_id: int | None = None  # the job whose chunk sends the requests (what it spent)


@dataclass(frozen=True)
class Call:
    """One request: its route ("chat", "completions" or "messages") and body; the sample index and seed identify it
    beside the body."""

    route: str
    body: dict[str, Any]
    sample_index: int = 0
    seed: int | None = None

    def key(self, target: Target) -> str:
        identity = {
            "base_url": target.base_url.rstrip("/"),
            "api": target.api,
            "model": target.model,
            "route": self.route,
            "body": self.body,
            "sample_index": self.sample_index,
            "seed": self.seed,
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class Sent:
    """What a chunk's calls cost: requests actually sent, and their tokens."""

    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    errors: list[str] = field(default_factory=list)


def api_key(target: Target) -> str:
    """The key from the endpoint's environment variable (read now, never kept); servers that need none get a
    placeholder, which the clients require."""
    if not target.api_key_env:
        return "none"
    value = os.environ.get(target.api_key_env, "")
    if not value:
        raise EndpointFailed(
            f"model {target.name}: the environment variable {target.api_key_env} (its API key) is not set here"
        )
    return value


_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()


def client_for(target: Target) -> Any:
    """The official client of the endpoint's API (`openai` or `anthropic`), one per process and key, with the SDK's own
    retries off (Concord retries, so that stored replies and the declared maximum hold)."""
    key = api_key(target)
    cache_key = (target.api, target.base_url, target.timeout, hashlib.sha256(key.encode()).hexdigest())
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            if target.api == "anthropic":
                import anthropic

                client = anthropic.Anthropic(
                    base_url=target.base_url, api_key=key, timeout=target.timeout, max_retries=0
                )
            else:
                import openai

                client = openai.OpenAI(base_url=target.base_url, api_key=key, timeout=target.timeout, max_retries=0)
            _clients[cache_key] = client
        return client


class _Limiter:
    """Spaces the starts of a model's requests by 60 / rpm seconds, across the threads of this process."""

    def __init__(self, rpm: int):
        self.interval = 60.0 / rpm
        self.lock = threading.Lock()
        self.next = 0.0

    def wait(self) -> None:
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + self.interval
        if start > now:
            time.sleep(start - now)


_limiters: dict[tuple[int, int], _Limiter] = {}


def _limiter(target: Target) -> _Limiter | None:
    if not target.rpm:
        return None
    with _clients_lock:
        return _limiters.setdefault((target.model_id, target.rpm), _Limiter(target.rpm))


class _Retry(Exception):
    def __init__(self, message: str, after: float | None = None):
        super().__init__(message)
        self.after = after


def _retry_after(headers: Any) -> float | None:
    value = (headers or {}).get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_MAX)
    except ValueError:
        return None


def endpoint_message(exc: Any) -> str:
    """The endpoint's own words in an error answer (the SDK's message prefixes its status code)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return str(getattr(exc, "message", exc))


def _post(target: Target, call: Call) -> dict[str, Any]:
    """One attempt: the reply's JSON, `_Retry` for what may pass, EndpointFailed for what will not."""
    client = client_for(target)
    if target.api == "anthropic":
        import anthropic as sdk
    else:
        import openai as sdk  # type: ignore[no-redef]
    body = dict(call.body)
    try:
        if call.route == "messages":
            raw = client.messages.with_raw_response.create(**body)
        elif call.route == "completions":
            raw = client.completions.with_raw_response.create(**body)
        else:
            raw = client.chat.completions.with_raw_response.create(**body)
        text = raw.text() if callable(raw.text) else raw.text  # a method in anthropic's client, a property in openai's
    except sdk.APIStatusError as exc:
        message = f"{target.base_url} answered {exc.status_code}: {endpoint_message(exc)}"
        if exc.status_code == 429 or exc.status_code >= 500:
            raise _Retry(message, _retry_after(exc.response.headers)) from None
        raise EndpointFailed(message) from None
    except sdk.APITimeoutError:
        raise _Retry(f"{target.base_url} did not answer within {target.timeout:g} s") from None
    except sdk.APIConnectionError as exc:
        raise _Retry(f"cannot reach {target.base_url}: {exc}") from None
    try:
        reply = json.loads(text)
    except json.JSONDecodeError:
        raise _Retry(f"{target.base_url} answered with a body that is not JSON: {text[:120]!r}") from None
    if not isinstance(reply, dict):
        raise _Retry(f"{target.base_url} answered with JSON that is not an object: {text[:120]!r}")
    return reply


def _send(target: Target, call: Call) -> dict[str, Any]:
    """The reply, after at most `max_retries` retries."""
    limiter = _limiter(target)
    first = float(settings.CONCORD_ENDPOINT_BACKOFF_SECONDS)
    for attempt in range(target.max_retries + 1):
        if limiter is not None:
            limiter.wait()
        try:
            return _post(target, call)
        except _Retry as exc:
            if attempt == target.max_retries:
                raise EndpointFailed(f"{exc} (after {target.max_retries} retries)") from None
            pause = exc.after if exc.after is not None else min(first * 2**attempt, BACKOFF_MAX)
            logger.warning("model %s: %s; retry %d of %d in %.2f s", target.name, exc, attempt + 1,
                           target.max_retries, pause)  # fmt: skip
            time.sleep(pause)
    raise AssertionError("unreachable")


def reply_text(reply: dict[str, Any], route: str) -> str:
    """The text of a reply (chat: the message's content; completions: the text; messages: the text blocks)."""
    try:
        if route == "messages":
            return "".join(block.get("text", "") for block in reply.get("content") or [] if block.get("type") == "text")
        choice = (reply.get("choices") or [{}])[0]
        if route == "completions":
            return str(choice.get("text") or "")
        return str((choice.get("message") or {}).get("content") or "")
    except (AttributeError, TypeError):
        return ""


def reply_usage(reply: dict[str, Any]) -> tuple[int, int]:
    """(tokens in, tokens out) from the reply's `usage` (0 where it gives none)."""
    usage = reply.get("usage") or {}
    if not isinstance(usage, dict):
        return 0, 0
    tokens_in = usage.get("prompt_tokens", usage.get("input_tokens", 0)) or 0
    tokens_out = usage.get("completion_tokens", usage.get("output_tokens", 0)) or 0
    return int(tokens_in), int(tokens_out)


def calls_send(*, target: Target, calls: Sequence[Call]) -> list[dict[str, Any]]:
    """Every call's reply, in the order of `calls`: the stored ones read, the others sent (concurrently, each stored
    as it arrives). EndpointFailed, after the replies that did come are stored, when one could not be had."""
    from django.db import IntegrityError, transaction

    from generation.models import EndpointReply

    keys = [call.key(target) for call in calls]
    stored = dict(EndpointReply.objects.filter(key__in=set(keys)).values_list("key", "reply"))
    pending: dict[str, Call] = {}
    for key, call in zip(keys, calls, strict=True):
        if key not in stored:
            pending.setdefault(key, call)
    errors: list[str] = []
    if pending:
        workers = max(1, min(target.concurrency, len(pending)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"endpoint-{target.name}") as pool:
            futures = {pool.submit(_send, target, call): key for key, call in pending.items()}
            for future in as_completed(futures):
                key = futures[future]
                try:
                    reply = future.result()
                except EndpointFailed as exc:
                    errors.append(str(exc))
                    continue
                call = pending[key]
                tokens_in, tokens_out = reply_usage(reply)
                try:
                    with transaction.atomic():
                        EndpointReply.objects.create(
                            key=key,
                            model_id=target.model_id,
                            job_id=target.job_id,
                            request={"route": call.route, **call.body, "sample_index": call.sample_index},
                            reply=reply,
                            text=reply_text(reply, call.route),
                            tokens_in=tokens_in,
                            tokens_out=tokens_out,
                        )
                except IntegrityError:
                    pass  # another runner stored the same request meanwhile: its reply is as good
                stored[key] = reply
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise EndpointFailed(f"model {target.name}: {errors[0]}{more}")
    return [stored[key] for key in keys]
