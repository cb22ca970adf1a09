"""The endpoint engine (generation/engines/base.py, `ModelEngine`): a model served elsewhere, called through its
official client (generation/engines/endpoint/client.py stores every reply before it is used).

- `sample`: each context as a plain completion where the endpoint takes them, else as one user message; each of a
  context's samples one request (`n` 1), with its own seed derived from the chunk's (`request_seed`), so that sample
  i of a context is the same request, and the same stored reply, whenever the chunk runs. `max_tokens` is the job's
  new tokens (an endpoint may stop earlier: it cannot be made to write exactly that many), with its top-p, and its
  top-k where the server is not OpenAI's own.
- `score`: each candidate text's prompt log-probs (vLLM's `prompt_logprobs`, else `echo` with `logprobs` on a
  completions endpoint): the mean (or summed) negative log-prob of its tokens after the first, as the hf engine
  scores; refused at job creation where the endpoint gives no prompt log-probs.
- `score_texts`: each text's prompt log-probs as `score` reads them, summed: with a server that puts BOS first (vLLM,
  for a model whose tokenizer adds one) that is every token given the ones before it from BOS, as the hf engine
  scores; refused at job creation where the endpoint gives no prompt log-probs.
- `answer`: the judge's prompt as one user message. Sampling: k requests per prompt at the run's temperature, seeded,
  each reply parsed to an option (`generation.engines.replies.reply_label`; with a JSON schema where the endpoint
  takes one). Likelihood: one request at temperature 0 for one token with its `top_logprobs`; an option's probability
  is the exponentiated log-prob of the best top token that starts the option's text, renormalised over the options
  present (absent: 0; none present: unparsed, the reply kept).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from generation.engines.base import (
    LIKELIHOOD,
    NO_PROB_SCORE,
    Answer,
    EngineUnavailable,
    Sampling,
    ScoreItem,
    ScoreResult,
    candidate_texts,
    score_result,
)
from generation.engines.endpoint.client import Call, Target, calls_send, reply_text
from generation.engines.replies import label_schema, reply_label
from generation.seeds import seed_derive

if TYPE_CHECKING:
    from generation.models import LanguageModel

TOP_LOGPROBS = 20  # OpenAI's most
ABSENT = -1000.0  # the log-score of an option absent from the top list: exp gives 0 in every softmax
ANSWER_TOKENS = 20  # room for a chat model's one-option reply


def target_of(language_model: LanguageModel, job_id: int | None = None) -> Target:
    """The endpoint settings of a registered endpoint model (`job_id`: the job its requests are spent for)."""
    endpoint = language_model.endpoint_settings
    return Target(
        job_id=job_id,
        model_id=language_model.pk,
        name=language_model.name,
        model=language_model.source,
        base_url=endpoint.base_url,
        api=endpoint.api,
        api_key_env=endpoint.api_key_env,
        concurrency=endpoint.concurrency,
        rpm=endpoint.rpm,
        timeout=endpoint.timeout,
        max_retries=endpoint.max_retries,
        completions=endpoint.completions and endpoint.api == "openai",
        has_logprobs=endpoint.has_logprobs and endpoint.api == "openai",
        prompt_logprobs=endpoint.prompt_logprobs and endpoint.api == "openai",
        structured=endpoint.structured and endpoint.api == "openai",
        price_in=float(endpoint.price_in) if endpoint.price_in is not None else None,
        price_out=float(endpoint.price_out) if endpoint.price_out is not None else None,
    )


def endpoint_job_problem(
    *,
    language_model: LanguageModel,
    num_beams: int,
    here: bool = False,
    prob_score: str = NO_PROB_SCORE,
    scores_per_generation: bool = False,
    judge_mode: str | None = None,
    text_scores: bool = False,
    **needs: Any,
) -> str | None:
    """Why the endpoint engine cannot run a job with this model (its `Engine` entry's check at job creation)."""
    import os

    from generation.models import ModelEndpoint

    try:
        target = target_of(language_model)
    except ModelEndpoint.DoesNotExist:
        return f"model {language_model.name} is an endpoint model without its endpoint settings; register it again"
    if num_beams != 1:
        return "an endpoint samples with one beam (num_beams 1)"
    if prob_score != NO_PROB_SCORE:
        if scores_per_generation:
            return (
                f"model {language_model.name} is an endpoint: Prob-TANGO scores with local weights; "
                f"use prob_score none (--prob-score none) to sample only"
            )
        if not target.prompt_logprobs:
            return (
                f"model {language_model.name}'s endpoint gives no prompt log-probs, which probability scoring needs; "
                f"use prob_score none (--prob-score none) to sample only, or serve the model with vLLM"
            )
    if text_scores and not target.prompt_logprobs:
        return (
            f"model {language_model.name}'s endpoint gives no prompt log-probs, which causal pair scoring needs "
            f"(vLLM's prompt_logprobs, or echo with logprobs); serve the model with vLLM, or score it with local weights"
        )
    if judge_mode == LIKELIHOOD and not target.has_logprobs:
        return (
            f"model {language_model.name}'s endpoint gives no top_logprobs, which a likelihood judge needs; "
            f"use --mode sampling"
        )
    if here and target.api_key_env and not os.environ.get(target.api_key_env):
        return f"model {language_model.name}: the environment variable {target.api_key_env} (its API key) is not set"
    return None


def request_seed(chunk_seed: int, index: int, sample: int) -> int:
    """The seed of a chunk's request for context `index`, sample `sample` (32 bits)."""
    return seed_derive(seed=seed_derive(seed=chunk_seed, offset=index), offset=sample)


def _is_openai_itself(target: Target) -> bool:
    return (urlparse(target.base_url).hostname or "").endswith("openai.com")


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _chat_body(target: Target, prompt: str, **params: Any) -> tuple[str, dict[str, Any]]:
    if target.api == "anthropic":
        params.pop("seed", None)  # Anthropic's API takes none
        extra = params.pop("extra_body", None) or {}
        # Its client names no sampling parameters any more; the API reads them from the body, where a model takes them.
        sampling = {name: params.pop(name) for name in ("temperature", "top_p") if name in params}
        body = {"model": target.model, "messages": _user(prompt), **params}
        if sampling or extra:
            body["extra_body"] = {**extra, **sampling}
        return "messages", body
    max_tokens = params.pop("max_tokens")
    return "chat", {"model": target.model, "messages": _user(prompt), "max_completion_tokens": max_tokens, **params}


def _first_token_logprobs(reply: dict[str, Any], route: str) -> dict[str, float]:
    """token -> log-prob of the reply's first token's top list (the best log-prob per token text)."""
    choice = (reply.get("choices") or [{}])[0]
    logprobs = choice.get("logprobs") or {}
    found: dict[str, float] = {}
    if route == "chat":
        content = logprobs.get("content") or []
        top = content[0].get("top_logprobs") or [] if content else []
        for entry in top:
            found[entry["token"]] = max(found.get(entry["token"], -math.inf), float(entry["logprob"]))
    else:
        tops = logprobs.get("top_logprobs") or []
        for token, value in (tops[0] if tops else {}).items():
            found[token] = max(found.get(token, -math.inf), float(value))
    return found


def _normal(text: str) -> str:
    return text.strip().casefold()


def option_probabilities(top: dict[str, float], options: dict[str, str]) -> dict[str, float] | None:
    """Each option's probability from a first token's top list (the module docstring); None when no option's first
    token is in it."""
    mass: dict[str, float] = {}
    for label, text in options.items():
        wanted = _normal(text)
        best = -math.inf
        for token, value in top.items():
            piece = _normal(token)
            if piece and wanted.startswith(piece):
                best = max(best, value)
        mass[label] = math.exp(best) if best > -math.inf else 0.0
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in mass.items()}


class EndpointEngine:
    name = "endpoint"

    def load(self, *, language_model: LanguageModel, job_id: int | None = None) -> Target:
        return target_of(language_model, job_id=job_id)  # nothing to load: the settings, read once per chunk

    def sample(
        self, *, language_model: LanguageModel, loaded: Target, contexts: Sequence[str], decoding: Sampling, seed: int
    ) -> list[list[str]]:
        target = loaded
        if decoding.num_beams != 1:
            raise EngineUnavailable("an endpoint samples with one beam (num_beams 1)")
        params: dict[str, Any] = {"max_tokens": decoding.max_new_tokens, "top_p": decoding.top_p}
        if decoding.top_k > 0 and not _is_openai_itself(target):
            params["extra_body"] = {"top_k": decoding.top_k}
        calls: list[Call] = []
        for index, context in enumerate(contexts):
            for sample in range(decoding.samples):
                own = request_seed(seed, index, sample)
                if target.completions:
                    body = {"model": target.model, "prompt": context, **params, "seed": own}
                    calls.append(Call(route="completions", body=body, sample_index=sample, seed=own))
                else:
                    route, body = _chat_body(target, context, **params, seed=own)
                    calls.append(Call(route=route, body=body, sample_index=sample, seed=own))
        replies = calls_send(target=target, calls=calls)
        texts = [reply_text(reply, call.route) for call, reply in zip(calls, replies, strict=True)]
        return [texts[i * decoding.samples : (i + 1) * decoding.samples] for i in range(len(contexts))]

    def score(self, *, language_model: LanguageModel, loaded: Target, items: Sequence[ScoreItem]) -> list[ScoreResult]:
        target = loaded
        texts = [candidate_texts(item) for item in items]
        replies = iter(_prompt_logprob_replies(target, [text for entry in texts for _, text in entry]))
        results = []
        for item, entry in zip(items, texts, strict=True):
            losses = {base: _prompt_loss(next(replies), item.prob_score) for base, _ in entry}
            results.append(score_result(item, losses))
        return results

    def score_texts(self, *, language_model: LanguageModel, loaded: Target, texts: Sequence[str]) -> list[float]:
        return [-_prompt_loss(reply, "sum") for reply in _prompt_logprob_replies(loaded, texts)]

    def answer(
        self,
        *,
        language_model: LanguageModel,
        loaded: Target,
        prompts: Sequence[str],
        options: dict[str, str],
        mode: str,
        k: int,
        temperature: float,
        seed: int,
    ) -> list[Answer]:
        target = loaded
        calls: list[Call] = []
        per = 1 if mode == LIKELIHOOD else k
        for index, prompt in enumerate(prompts):
            for sample in range(per):
                if mode == LIKELIHOOD:
                    if not target.has_logprobs:
                        raise EngineUnavailable(f"model {target.name}'s endpoint gives no top_logprobs")
                    route, body = _chat_body(
                        target, prompt, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS
                    )
                    calls.append(Call(route=route, body=body))
                    continue
                own = request_seed(seed, index, sample)
                params: dict[str, Any] = {"max_tokens": ANSWER_TOKENS, "temperature": temperature, "seed": own}
                if target.structured:
                    params["response_format"] = {
                        "type": "json_schema",
                        "json_schema": {"name": "answer", "schema": label_schema(options), "strict": True},
                    }
                route, body = _chat_body(target, prompt, **params)
                calls.append(Call(route=route, body=body, sample_index=sample, seed=own))
        replies = calls_send(target=target, calls=calls)
        answers: list[Answer] = []
        for index in range(len(prompts)):
            pairs = list(
                zip(calls[index * per : (index + 1) * per], replies[index * per : (index + 1) * per], strict=True)
            )
            texts = [reply_text(reply, call.route) for call, reply in pairs]
            if mode == LIKELIHOOD:
                call, reply = pairs[0]
                probabilities = option_probabilities(_first_token_logprobs(reply, call.route), options)
                scores = (
                    {label: math.log(p) if p > 0 else ABSENT for label, p in probabilities.items()}
                    if probabilities is not None
                    else None
                )
                answers.append(Answer(replies=texts, labels=[None] * len(texts), scores=scores))
                continue
            labels = [reply_label(text, options, structured=target.structured) for text in texts]
            answers.append(Answer(replies=texts, labels=labels))
        return answers


def _prompt_logprob_replies(target: Target, texts: Sequence[str]) -> list[dict[str, Any]]:
    """Each text's completion reply with its prompt log-probs (one token written, at temperature 0), stored."""
    if not target.prompt_logprobs:
        raise EngineUnavailable(f"model {target.name}'s endpoint gives no prompt log-probs")
    calls = [
        Call(
            route="completions",
            body={
                "model": target.model,
                "prompt": text,
                "max_tokens": 1,
                "temperature": 0.0,
                "extra_body": {"prompt_logprobs": 0},
            },
        )
        for text in texts
    ]
    return calls_send(target=target, calls=calls)


def _prompt_loss(reply: dict[str, Any], prob_score: str) -> float:
    """The mean (or summed) negative log-prob of a prompt's tokens after the first, from vLLM's `prompt_logprobs`
    (a list: None, then one {token id: {logprob, ...}} per token) or a completion's echoed `token_logprobs`."""
    choice = (reply.get("choices") or [{}])[0]
    values: list[float] = []
    prompt = choice.get("prompt_logprobs") or reply.get("prompt_logprobs")
    if prompt:
        for entry in prompt[1:]:
            if entry:  # with prompt_logprobs 0, vLLM gives the prompt's own token alone
                own = next(iter(entry.values()))
                values.append(float(own["logprob"]) if isinstance(own, dict) else float(own))
    else:
        token_logprobs = (choice.get("logprobs") or {}).get("token_logprobs") or []
        values = [float(v) for v in token_logprobs[1:] if v is not None]
    if not values:
        raise EngineUnavailable("the endpoint's reply carries no prompt log-probs")
    total = -sum(values)
    return total if prob_score == "sum" else total / len(values)
