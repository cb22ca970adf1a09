"""Celery routing by engine (docs/operations.md, 'GPU workers and engines'): a chunk of a job that names the vllm
engine goes to the `CONCORD_VLLM_QUEUE` queue (default `generation-gpu`), where only GPU workers with vLLM listen;
every other generation task keeps the `generation` queue (config/settings.py, CELERY_TASK_ROUTES)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

CHUNK_TASK = "generation.tasks.chunk_run_task"


def task_route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **extra: Any) -> dict | None:
    """A Celery router: the queue of a chunk whose job names vllm; None leaves the task to the next router."""
    if name != CHUNK_TASK:
        return None
    chunk_id = (args or [None])[0] if not kwargs else kwargs.get("chunk_id")
    if chunk_id is None:
        return None
    from generation.models import JobChunk

    options_ = JobChunk.objects.filter(pk=chunk_id).values_list("job__options", flat=True).first() or {}
    if (options_ or {}).get("engine") == "vllm":
        return {"queue": settings.CONCORD_VLLM_QUEUE}
    return None
