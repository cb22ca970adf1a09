"""Celery routing by engine (docs/operations.md, 'GPU workers and engines'): a chunk of a job that names an engine
with a queue of its own (`Engine.queue`, generation/engines/__init__.py) goes there: the vllm engine's is
`CONCORD_VLLM_QUEUE` (default `generation-gpu`), where only GPU workers with vLLM listen. Every other generation task
keeps the `generation` queue (config/settings.py, CELERY_TASK_ROUTES)."""

from __future__ import annotations

from typing import Any

from generation.engines import ENGINES

CHUNK_TASK = "generation.tasks.chunk_run_task"


def task_route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **extra: Any) -> dict | None:
    """A Celery router: the queue of a chunk whose job names an engine with a queue of its own; None leaves the task
    to the next router."""
    if name != CHUNK_TASK:
        return None
    chunk_id = (args or [None])[0] if not kwargs else kwargs.get("chunk_id")
    if chunk_id is None:
        return None
    from generation.jobs.kinds import job_kind_get
    from generation.models import JobChunk

    kind, engine_name = JobChunk.objects.filter(pk=chunk_id).values_list(
        "job__kind", "job__generation_run__engine"
    ).first() or ("", "")
    handler = job_kind_get(kind)
    if handler is not None and handler.queue:
        return {"queue": handler.queue}  # a kind's own queue (a pool's imports: the default queue)
    engine = ENGINES.get(engine_name or "")
    queue = engine.queue() if engine is not None else None
    return {"queue": queue} if queue else None
