"""Generation engines: who samples a job's continuations (docs/operations.md, 'GPU workers and engines').

`ENGINES` is the one list of them, name -> `Engine`; the job parameters (the `engine` choices), the worker's
`CONCORD_ENGINE`, Celery's routing (generation/engines/routing.py) and the chunk runner all read it, and none of them
names an engine:

- `hf` (the default): transformers' `generate`, batched, in the worker's own process (generation/engines/hf/sampling.py);
- `vllm`: vLLM's offline `LLM` API, for GPU hosts (generation/engines/vllm.py).

A job names its engine (the `engine` parameter: form, API, `generate --engine`); a job that names none runs on the
worker's engine, `CONCORD_ENGINE` (default hf). Both engines store the same rows: the continuation alone, special
tokens skipped, chunk by chunk, each chunk's sampling seeded from the job's seed so that a re-run chunk writes the
same text. Probability scoring always runs on the prefix-shared HF scorer (generation/engines/hf/scoring.py).

`engine_check` is what job creation calls: an engine that is not installed, vLLM with a model it cannot read (GGUF
only) or with beam search, and a device this host does not have are refused there, with a message, instead of
failing the job later.

A new engine is a module with a sampler class (the `Sampler` protocol) and, if it refuses some jobs, a function
that says why, and one `Engine` entry below.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings

if TYPE_CHECKING:
    from generation.engines.hf.loading import LoadedModel
    from generation.engines.hf.sampling import Decoding
    from generation.models import LanguageModel


class EngineUnavailable(ValueError):
    """The engine cannot run this job here; the message says why and what to do."""


class Sampler(Protocol):
    name: str

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        contexts: Sequence[str],
        decoding: Decoding,
        seed: int,
    ) -> list[list[str]]:
        """`decoding.samples` continuations per context, in the order of `contexts`."""
        ...


def _imported(path: str) -> Any:
    """The object at "module:attribute", imported when first asked for (an engine's code may need a GPU stack)."""
    module, attribute = path.split(":", 1)
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Engine:
    """One engine: where its code lives and what the rest of the project needs to know about it."""

    name: str
    sampler_path: str  # "module:Class" of its `Sampler`, imported when a chunk first samples with it
    # "module:function" saying why it cannot run a job (keyword arguments language_model and num_beams), or None
    problem_path: str | None = None
    package: str | None = None  # the package it needs on this host; None: the main environment has it
    install_hint: str = ""  # what to do where that package is missing
    queue_setting: str | None = None  # the setting naming the Celery queue of its chunks; None: the generation queue
    stoppable: bool = False  # its sampling call takes `stop` and raises Interrupted once it turns True
    samples_groups: bool = False  # its sampler has `sample_groups`: several groups (contexts, seed) in one call

    def installed(self) -> bool:
        return self.package is None or importlib.util.find_spec(self.package) is not None

    def queue(self) -> str | None:
        """The queue its chunks are routed to, or None for the generation queue."""
        return getattr(settings, self.queue_setting) if self.queue_setting else None

    def sampler(self) -> Sampler:
        sampler: Sampler = _imported(self.sampler_path)()
        return sampler

    def problem(self, *, language_model: LanguageModel, num_beams: int) -> str | None:
        """Why it cannot run a job with this model and beams anywhere, or None."""
        if self.problem_path is None:
            return None
        problem: str | None = _imported(self.problem_path)(language_model=language_model, num_beams=num_beams)
        return problem

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        contexts: Sequence[str],
        decoding: Decoding,
        seed: int,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[str]]:
        """Its sampler's continuations; an engine that is `stoppable` is handed `stop`."""
        sampler: Any = self.sampler()
        extra = {"stop": stop} if self.stoppable else {}
        result: list[list[str]] = sampler.sample(
            language_model=language_model, loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, **extra
        )
        return result

    def sample_groups(
        self,
        *,
        language_model: LanguageModel,
        loaded: LoadedModel,
        groups: Sequence[tuple[Sequence[str], int]],
        decoding: Decoding,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[list[str]]]:
        """Its sampler's continuations for each group (contexts and their seed), as `sample` gives them group by
        group; for an engine that `samples_groups`."""
        sampler: Any = self.sampler()
        result: list[list[list[str]]] = sampler.sample_groups(
            language_model=language_model, loaded=loaded, groups=groups, decoding=decoding, stop=stop
        )
        return result


ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Engine(name="hf", sampler_path="generation.engines.hf.engine:HfEngine", stoppable=True, samples_groups=True),
        Engine(
            name="vllm",
            sampler_path="generation.engines.vllm:VllmEngine",
            problem_path="generation.engines.vllm:vllm_job_problem",
            package="vllm",
            install_hint="install requirements-gpu.txt on a GPU host (docs/operations.md, 'GPU workers and engines'), "
            "or choose the hf engine",
            queue_setting="CONCORD_VLLM_QUEUE",
        ),
    )
}


def engine_lookup(name: str) -> Engine:
    """The registered engine of this name, or EngineUnavailable naming the ones there are."""
    engine = ENGINES.get(name)
    if engine is None:
        raise EngineUnavailable(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")
    return engine


def worker_engine() -> str:
    """This worker's engine for jobs that name none: CONCORD_ENGINE (default hf)."""
    name = settings.CONCORD_ENGINE
    if name not in ENGINES:
        raise EngineUnavailable(f"CONCORD_ENGINE={name!r} is not an engine: use one of {', '.join(ENGINES)}")
    return str(name)


def engine_name(requested: str | None) -> str:
    """The engine a job runs on: the one it names, else the worker's."""
    return (requested or "").strip().lower() or worker_engine()


def engine_get(name: str) -> Sampler:
    """The sampler of the engine of this name."""
    return engine_lookup(name).sampler()


def engine_installed(name: str) -> bool:
    return engine_lookup(name).installed()


def engine_check(*, engine: str | None, language_model: LanguageModel, num_beams: int = 1) -> str:
    """The engine a job with these parameters would run on, or EngineUnavailable with the reason. With
    CONCORD_ENGINE_CHECK=off (a web host that queues work for workers elsewhere) only what holds everywhere is checked:
    the engine's name, and what the engine cannot do at all."""
    name = engine_name(engine)
    chosen = engine_lookup(name)
    problem = chosen.problem(language_model=language_model, num_beams=num_beams)
    if problem:
        raise EngineUnavailable(problem)
    if settings.CONCORD_ENGINE_CHECK != "off":
        if not chosen.installed():
            raise EngineUnavailable(f"the {name} engine is not installed on this host: {chosen.install_hint}")
        _device_check(language_model)
    return name


def _device_check(language_model: LanguageModel) -> None:
    device = (language_model.device or "auto").strip()
    if device in ("auto", "cpu"):
        return
    import torch

    if device.startswith("cuda"):
        index = int(device.split(":", 1)[1]) if ":" in device and device.split(":", 1)[1].isdigit() else 0
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if index >= count:
            have = f"{count} CUDA device(s)" if count else "no CUDA device"
            raise EngineUnavailable(
                f"model {language_model.name} asks for device {device!r}, but this host has {have}; "
                f"register the model with device auto or cpu, or run the job on a GPU worker"
            )
        return
    if device == "mps" and not torch.backends.mps.is_available():
        raise EngineUnavailable(f"model {language_model.name} asks for device 'mps', which this host does not have")


def engine_sample(
    *,
    engine: str | None,
    language_model: LanguageModel,
    loaded: LoadedModel,
    contexts: Sequence[str],
    decoding: Decoding,
    seed: int,
    stop: Callable[[], bool] | None = None,
) -> list[list[str]]:
    """Sample with the job's engine (or the worker's): the one call the chunk runner makes. An engine that is
    `stoppable` asks `stop` during the call and raises generation.engines.hf.sampling.Interrupted once it turns True."""
    return engine_lookup(engine_name(engine)).sample(
        language_model=language_model, loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, stop=stop
    )
