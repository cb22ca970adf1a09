"""Models behind an endpoint (docs/domain.md, 'Models behind an endpoint'): where and how to call one, and every reply
it gave, stored before it is used.

The API key is never a column: `api_key_env` names the environment variable the worker reads when it sends a request.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from generation.models.jobs import Job, LanguageModel


class ModelEndpoint(models.Model):
    """How a registered model of kind `endpoint` is called: its server, API, key variable, limits and prices, and what
    the server was found to give when the model was registered (`completions`, `logprobs`, `prompt_logprobs`,
    `structured`)."""

    class Api(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible (OpenAI, vLLM's server, llama.cpp, Ollama, TGI)"
        ANTHROPIC = "anthropic", "Anthropic's Messages API"

    class Logprobs(models.TextChoices):
        AUTO = "auto", "ask the server when the model is registered"
        YES = "yes"
        NO = "no"

    model = models.OneToOneField(LanguageModel, on_delete=models.CASCADE, related_name="endpoint_settings")
    base_url = models.URLField(max_length=500, help_text="e.g. https://api.openai.com/v1 or http://gpu-1:8000/v1")
    api = models.CharField(max_length=16, choices=Api.choices, default=Api.OPENAI)
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="the environment variable holding the API key; empty: none is sent"
    )
    concurrency = models.PositiveIntegerField(default=4, help_text="requests in flight at once")
    rpm = models.PositiveIntegerField(null=True, blank=True, help_text="requests per minute at most; empty: no limit")
    timeout = models.FloatField(default=60.0, help_text="seconds one request may take")
    max_retries = models.PositiveIntegerField(default=5, help_text="retries of a 429, a 5xx or a timeout")
    price_in = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="USD per million input tokens"
    )
    price_out = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True, help_text="USD per million output tokens"
    )
    logprobs = models.CharField(max_length=4, choices=Logprobs.choices, default=Logprobs.AUTO)
    # What the server gave when the model was registered (auto), or was declared to give.
    completions = models.BooleanField(default=True, help_text="it takes plain-text completions (else chat only)")
    has_logprobs = models.BooleanField(default=False, help_text="its replies carry top_logprobs")
    prompt_logprobs = models.BooleanField(default=False, help_text="it gives the prompt's token log-probs")
    structured = models.BooleanField(default=False, help_text="it takes a JSON schema for its reply")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="endpoint_concurrency_positive"),
            models.CheckConstraint(condition=Q(timeout__gt=0), name="endpoint_timeout_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.model.source} at {self.base_url}"


class EndpointReply(models.Model):
    """One request to an endpoint and its reply, keyed by what identifies the request (docs/domain.md, 'Once, and
    resumable'): the endpoint, the model, the exact messages or prompt, the parameters, the sample index and the
    seed, hashed into `key`. A request whose key is stored is never sent again, by any run."""

    key = models.CharField(max_length=64, unique=True, help_text="sha256 of the request's identity")
    model = models.ForeignKey(LanguageModel, on_delete=models.CASCADE, related_name="endpoint_replies")
    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="endpoint_replies",
        help_text="the job whose chunk sent it (what it spent)",
    )  # fmt: skip
    request = models.JSONField(help_text="the request as sent (no key)")
    reply = models.JSONField(help_text="the endpoint's answer, as it came")
    text = models.TextField(blank=True, help_text="the reply's text")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["job"], name="endpoint_reply_job")]

    def __str__(self) -> str:
        return f"reply {self.pk} of {self.model_id}"
