"""Registering a model (docs/operations.md, 'Registering models'): local weights (a hub id, a directory, a GGUF file
inside an installed package) or a model behind an endpoint (docs/domain.md, 'Models behind an endpoint').

`model_add` is the one writer: `manage.py model_add`, `POST /api/models/` and the admin's form all call it. Every
problem is reported at once, by field, and nothing is written: an endpoint is asked, before the row is written,
whether it is reachable with its key and lists the model (generation/engines/endpoint/registration.py). The key
itself is never an argument: only the name of the environment variable that holds it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django.db import transaction

from common.audit import CREATE, audit_record
from generation.models import LanguageModel, ModelEndpoint
from generation.parameters import JobParameterError

NAME = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
APIS = [choice for choice, _ in ModelEndpoint.Api.choices]
LOGPROBS = [choice for choice, _ in ModelEndpoint.Logprobs.choices]


def _positive(value: Any, field: str, errors: dict[str, str], *, whole: bool = True, empty: bool = False):
    if value is None or value == "":
        return None
    try:
        number = int(value) if whole else float(value)
    except (TypeError, ValueError):
        errors[field] = f"must be a {'whole ' if whole else ''}number, got {value!r}"
        return None
    if number <= 0 and not (empty and number == 0):
        errors[field] = f"must be above 0, got {value!r}"
        return None
    return number


def _price(value: Any, field: str, errors: dict[str, str]) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        errors[field] = f"must be a price in USD per million tokens, got {value!r}"
        return None
    if price < 0 or not price.is_finite():
        errors[field] = f"must be 0 or more, got {value!r}"
        return None
    return price


def model_add(
    *,
    name: str,
    hub: str | None = None,
    path: str | None = None,
    package: str | None = None,
    gguf: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api: str = "openai",
    api_key_env: str = "",
    concurrency: int | None = None,
    rpm: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    price_in: Any = None,
    price_out: Any = None,
    logprobs: str = "auto",
    dtype: str = "auto",
    device: str = "auto",
    batch_size: int | None = None,
    created_by=None,
) -> LanguageModel:
    """Register one model: exactly one of `hub`, `path`, `package` (with `gguf`), or `base_url` (with `model`)."""
    errors: dict[str, str] = {}
    if not isinstance(name, str) or not NAME.match(name):
        errors["name"] = f"must be 1-64 letters, digits, - or _, got {name!r}"
    elif LanguageModel.objects.filter(name=name).exists():
        errors["name"] = f"a model named {name!r} is registered already"
    sources = [
        key for key, value in (("hub", hub), ("path", path), ("package", package), ("base_url", base_url)) if value
    ]
    if len(sources) != 1:
        errors["source"] = (
            "give exactly one of --hub ID, --path DIR, --package PKG --gguf FILE, --base-url URL --model ID"
        )
    batch = _positive(batch_size, "batch_size", errors) or 16
    if dtype not in LanguageModel.Dtype.values:
        errors["dtype"] = f"unknown dtype {dtype!r}; use {', '.join(LanguageModel.Dtype.values)}"
    fields: dict[str, Any] = {"dtype": dtype, "device": device or "auto", "batch_size": batch}
    endpoint: dict[str, Any] | None = None
    if sources and sources[0] != "base_url" and len(sources) == 1:
        fields.update(_local_fields(kind=sources[0], hub=hub, path=path, package=package, gguf=gguf, errors=errors))
    elif sources == ["base_url"]:
        endpoint = _endpoint_fields(
            base_url=str(base_url), model=model, api=api, api_key_env=api_key_env, concurrency=concurrency, rpm=rpm,
            timeout=timeout, max_retries=max_retries, price_in=price_in, price_out=price_out, logprobs=logprobs,
            errors=errors,
        )  # fmt: skip
        fields.update(source_kind=LanguageModel.SourceKind.ENDPOINT, source=model or "", gguf_file="", device="auto")
    if errors:
        raise JobParameterError(errors)
    if endpoint is not None:
        endpoint.update(_endpoint_answers(name=name, model=str(model), endpoint=endpoint, logprobs=logprobs))
    with transaction.atomic():
        row = LanguageModel.objects.create(name=name, **fields)
        if endpoint is not None:
            ModelEndpoint.objects.create(model=row, **endpoint)
        audit_record(
            event="model.add",
            obj=row,
            actor=created_by,
            action=CREATE,
            data={"name": name, "source_kind": row.source_kind, "source": row.source}
            | ({"base_url": endpoint["base_url"], "api": endpoint["api"]} if endpoint else {}),
        )
    return row


def _local_fields(
    *, kind: str, hub: str | None, path: str | None, package: str | None, gguf: str | None, errors: dict[str, str]
) -> dict[str, Any]:
    if kind == "hub":
        return {"source_kind": LanguageModel.SourceKind.HUB, "source": hub, "gguf_file": gguf or ""}
    if kind == "path":
        if not Path(str(path)).is_dir():
            errors["path"] = f"{path} is not a directory"
        return {"source_kind": LanguageModel.SourceKind.PATH, "source": path, "gguf_file": gguf or ""}
    if not gguf:
        errors["gguf"] = "a package model names its GGUF file (--gguf FILE)"
    elif importlib.util.find_spec(str(package)) is None:
        errors["package"] = f"no installed package {package!r}"
    return {"source_kind": LanguageModel.SourceKind.PACKAGE_GGUF, "source": package, "gguf_file": gguf or ""}


def _endpoint_fields(
    *, base_url: str, model: str | None, api: str, api_key_env: str, concurrency, rpm, timeout, max_retries,
    price_in, price_out, logprobs: str, errors: dict[str, str],
) -> dict[str, Any]:  # fmt: skip
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        errors["base_url"] = f"must be an http(s) URL, got {base_url!r}"
    if not model:
        errors["model"] = "an endpoint model names its model id there (--model ID)"
    if api not in APIS:
        errors["api"] = f"unknown API {api!r}; use {' or '.join(APIS)}"
    api_key_env = (api_key_env or "").strip()
    if api_key_env and not ENV_NAME.match(api_key_env):
        errors["api_key_env"] = f"must be the name of an environment variable, got {api_key_env!r}"
    elif api_key_env and not os.environ.get(api_key_env):
        errors["api_key_env"] = f"the environment variable {api_key_env} is not set here"
    if logprobs not in LOGPROBS:
        errors["logprobs"] = f"must be {', '.join(LOGPROBS)}, got {logprobs!r}"
    fields: dict[str, Any] = {
        "base_url": base_url.rstrip("/"),
        "api": api,
        "api_key_env": api_key_env,
        "concurrency": _positive(concurrency, "concurrency", errors) or 4,
        "rpm": _positive(rpm, "rpm", errors),
        "timeout": _positive(timeout, "timeout", errors, whole=False) or 60.0,
        "max_retries": 5,
        "price_in": _price(price_in, "price_in", errors),
        "price_out": _price(price_out, "price_out", errors),
        "logprobs": logprobs,
    }
    if max_retries is not None and max_retries != "":
        try:
            fields["max_retries"] = int(max_retries)
            if fields["max_retries"] < 0:
                raise ValueError
        except (TypeError, ValueError):
            errors["max_retries"] = f"must be a whole number, 0 or more, got {max_retries!r}"
    if (fields["price_in"] is None) != (fields["price_out"] is None) and "price_in" not in errors:
        errors["price_in"] = "give both prices (--price-in and --price-out) or neither"
    return fields


def _endpoint_answers(*, name: str, model: str, endpoint: dict[str, Any], logprobs: str) -> dict[str, bool]:
    from generation.engines.endpoint.client import EndpointFailed, Target
    from generation.engines.endpoint.registration import endpoint_probe

    target = Target(
        model_id=0,
        name=name,
        model=model,
        base_url=endpoint["base_url"],
        api=endpoint["api"],
        api_key_env=endpoint["api_key_env"],
        timeout=endpoint["timeout"],
    )
    try:
        return endpoint_probe(target=target, logprobs=logprobs)
    except EndpointFailed as exc:
        raise JobParameterError({"base_url": str(exc)}) from None


def endpoint_settings_check(*, name: str, model: str, **settings: Any) -> dict[str, Any]:
    """An endpoint's settings checked as `model_add` checks them (every bad field at once, then the endpoint asked),
    as `ModelEndpoint` fields: for a form that writes the row itself (the admin's)."""
    errors: dict[str, str] = {}
    fields = _endpoint_fields(model=model, errors=errors, **settings)
    if errors:
        raise JobParameterError(errors)
    return fields | _endpoint_answers(name=name, model=model, endpoint=fields, logprobs=fields["logprobs"])
