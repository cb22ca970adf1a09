"""What an endpoint is asked when a model is registered on it: is it reachable with its key, does it list the model,
and what does it give (plain completions, top_logprobs, prompt log-probs, a JSON schema for the reply). The answers
are the `ModelEndpoint` row's `completions`, `has_logprobs`, `prompt_logprobs` and `structured`; `--logprobs yes|no`
declares the two log-prob answers instead of asking. The probes are a few one-token requests, not stored."""

from __future__ import annotations

from typing import Any

from generation.engines.endpoint.client import EndpointFailed, Target, client_for, endpoint_message


def _models(target: Target) -> list[str]:
    client = client_for(target)
    if target.api == "anthropic":
        import anthropic as sdk
    else:
        import openai as sdk  # type: ignore[no-redef]
    try:
        return [model.id for model in client.models.list()]
    except sdk.APIStatusError as exc:
        raise EndpointFailed(
            f"{target.base_url} answered {exc.status_code} to the model list: {endpoint_message(exc)}"
        ) from None
    except (sdk.APIConnectionError, sdk.APITimeoutError) as exc:
        raise EndpointFailed(f"cannot reach {target.base_url}: {exc}") from None


def _tries(call: Any) -> Any | None:
    """The reply of a probe, or None when the endpoint refuses it."""
    import openai

    try:
        return call()
    except openai.APIError:
        return None


def endpoint_probe(*, target: Target, logprobs: str = "auto") -> dict[str, bool]:
    """The endpoint's answers (the module docstring), or EndpointFailed naming what is wrong."""
    listed = _models(target)
    if target.model not in listed:
        shown = ", ".join(listed[:20]) or "none"
        raise EndpointFailed(f"{target.base_url} does not list the model {target.model!r}; it lists: {shown}")
    if target.api == "anthropic":
        return {"completions": False, "has_logprobs": False, "prompt_logprobs": False, "structured": False}
    client = client_for(target)
    user = [{"role": "user", "content": "Say yes."}]
    completion = _tries(lambda: client.completions.create(model=target.model, prompt="Yes", max_tokens=1))
    found = {"completions": completion is not None}
    if logprobs == "auto":
        chat = _tries(
            lambda: client.chat.completions.create(
                model=target.model, messages=user, max_completion_tokens=1, logprobs=True, top_logprobs=5
            )
        )
        content = chat.choices[0].logprobs.content if chat is not None and chat.choices[0].logprobs else None
        found["has_logprobs"] = bool(content and content[0].top_logprobs)
        prompt = None
        if found["completions"]:
            prompt = _tries(
                lambda: client.completions.create(
                    model=target.model,
                    prompt="Yes, it is",
                    max_tokens=1,
                    extra_body={"prompt_logprobs": 0},
                )
            )
        extra = (prompt.model_extra or {}) if prompt is not None else {}
        choice_extra = (prompt.choices[0].model_extra or {}) if prompt is not None else {}
        found["prompt_logprobs"] = bool(extra.get("prompt_logprobs") or choice_extra.get("prompt_logprobs"))
    else:
        found["has_logprobs"] = found["prompt_logprobs"] = logprobs == "yes"
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["label"],
        "additionalProperties": False,
    }
    structured = _tries(
        lambda: client.chat.completions.create(
            model=target.model,
            messages=user,
            max_completion_tokens=12,
            response_format={"type": "json_schema", "json_schema": {"name": "probe", "schema": schema, "strict": True}},
        )
    )
    found["structured"] = structured is not None
    return found
