"""Engines: who runs a registered model (docs/operations.md, 'GPU workers and engines' and 'Models behind an
endpoint').

Every engine implements one interface, `ModelEngine` (generation/engines/base.py): `load` what it needs, `sample`
continuations, `score` masked instances where it can, `answer` a judge's prompts (a judge run's and a judge check's
alike), `score_texts` where it can (each text's summed token log-probability from BOS: a `pair_score` job's causal
method). `ENGINES` is the one list of them,
name -> `Engine` (where its code lives and what the rest of the project needs to know about it); the job parameters
(the `engine` choices), the worker's `CONCORD_ENGINE`, Celery's routing (generation/engines/routing.py), the chunk
runner of generation jobs and the judge kind's all read it, and none of them names an engine:

- `hf` (the default): transformers, batched, in the worker's own process (generation/engines/hf/);
- `vllm`: vLLM's offline `LLM` API, for GPU hosts (generation/engines/vllm.py); it samples, and scores, judges and
  scores texts through the hf engine;
- `endpoint`: a model served elsewhere, through its official client (`openai` for every OpenAI-compatible server,
  `anthropic` for Claude; generation/engines/endpoint/), every reply stored before it is used.

Which engine runs a model: each engine `serves` some kinds of model (`LanguageModel.source_kind`: local weights, or
an endpoint). A job may name its engine (the `engine` parameter: form, API, `generate --engine`); one that names none
runs on the worker's engine, `CONCORD_ENGINE` (default hf), when that engine serves the model, else on the first
engine that does (an endpoint model: `endpoint`). Every engine stores the same rows: the continuation alone, chunk by
chunk, each chunk's sampling seeded from the job's seed so that a re-run chunk writes the same text.

`engine_check` is what job creation (generation jobs and judge runs alike) calls: an engine that is not installed, a
model it cannot run, a job it cannot do (vLLM with beam search; probability scoring on an endpoint without prompt
log-probs), a device or an API key variable this host does not have are refused there, with a message, instead of
failing the job later.

To add an engine: write a class with the five methods of `ModelEngine` (raise `EngineUnavailable` from one it cannot
do), a function that says why it cannot run a job (keyword arguments `language_model`, `num_beams`, `here` and the
job's needs: `prob_score` and `scores_per_generation` of a generation job, `judge_mode` of a judge run or check,
`text_scores` of a causal `pair_score` job; None when it can; take `**needs` so that a new need does not break it),
and add one `Engine` entry to `ENGINES` below, naming the model kinds it serves. Nothing else names it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from generation.engines.base import Answer, EngineUnavailable, ModelEngine, Sampling, ScoreItem, ScoreResult

if TYPE_CHECKING:
    from generation.models import LanguageModel

__all__ = [
    "ENGINES", "Engine", "EngineUnavailable", "ModelEngine", "engine_check", "engine_for", "engine_get",
    "engine_installed", "engine_lookup", "engine_name", "engine_sample", "worker_engine",
]  # fmt: skip

LOCAL_WEIGHTS = ("hub", "path", "package_gguf")  # the `LanguageModel.source_kind`s of weights a worker loads
_instances: dict[str, ModelEngine] = {}


def _imported(path: str) -> Any:
    """The object at "module:attribute", imported when first asked for (an engine's code may need a GPU stack)."""
    module, attribute = path.split(":", 1)
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Engine:
    """One engine: where its code lives and what the rest of the project needs to know about it."""

    name: str
    engine_path: str  # "module:Class" of its `ModelEngine`, imported when a chunk first needs it
    serves: tuple[str, ...] = LOCAL_WEIGHTS  # the model kinds (`LanguageModel.source_kind`) it runs
    # "module:function" saying why it cannot run a job (keyword arguments language_model, num_beams, here and the
    # job's needs), or None
    problem_path: str | None = None
    package: str | None = None  # the package it needs on this host; None: the main environment has it
    install_hint: str = ""  # what to do where that package is missing
    queue_setting: str | None = None  # the setting naming the Celery queue of its chunks; None: the generation queue
    stoppable: bool = False  # its sampling call takes `stop` and raises Interrupted once it turns True
    samples_groups: bool = False  # it has `sample_groups`: several groups (contexts, seed) in one call
    uses_device: bool = True  # it runs the model on this host's device (`LanguageModel.device`)

    def installed(self) -> bool:
        return self.package is None or importlib.util.find_spec(self.package) is not None

    def queue(self) -> str | None:
        """The queue its chunks are routed to, or None for the generation queue."""
        return getattr(settings, self.queue_setting) if self.queue_setting else None

    def implementation(self) -> ModelEngine:
        """Its `ModelEngine`, made once per process (an engine may keep its clients and rate limits)."""
        found = _instances.get(self.name)
        if found is None:
            found = _instances[self.name] = _imported(self.engine_path)()
        return found

    def problem(self, *, language_model: LanguageModel, num_beams: int, here: bool = False, **needs: Any) -> str | None:
        """Why it cannot run a job with this model, beams and needs anywhere (`here`: on this host), or None."""
        if language_model.source_kind not in self.serves:
            return _serves_problem(self, language_model)
        if self.problem_path is None:
            return None
        problem: str | None = _imported(self.problem_path)(
            language_model=language_model, num_beams=num_beams, here=here, **needs
        )
        return problem

    def load(self, *, language_model: LanguageModel, job_id: int | None = None) -> Any:
        return self.implementation().load(language_model=language_model, job_id=job_id)

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        contexts: Sequence[str],
        decoding: Sampling,
        seed: int,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[str]]:
        """Its continuations; an engine that is `stoppable` is handed `stop`."""
        implementation: Any = self.implementation()
        extra = {"stop": stop} if self.stoppable else {}
        result: list[list[str]] = implementation.sample(
            language_model=language_model, loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, **extra
        )
        return result

    def sample_groups(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        groups: Sequence[tuple[Sequence[str], int]],
        decoding: Sampling,
        stop: Callable[[], bool] | None = None,
    ) -> list[list[list[str]]]:
        """Its continuations for each group (contexts and their seed), as `sample` gives them group by group; for an
        engine that `samples_groups`."""
        implementation: Any = self.implementation()
        result: list[list[list[str]]] = implementation.sample_groups(
            language_model=language_model, loaded=loaded, groups=groups, decoding=decoding, stop=stop
        )
        return result

    def score(self, *, language_model: LanguageModel, loaded: Any, items: Sequence[ScoreItem]) -> list[ScoreResult]:
        return self.implementation().score(language_model=language_model, loaded=loaded, items=items)

    def score_texts(self, *, language_model: LanguageModel, loaded: Any, texts: Sequence[str]) -> list[float]:
        """Each text's summed token log-probability from BOS: the call a causal `pair_score` job makes."""
        return self.implementation().score_texts(language_model=language_model, loaded=loaded, texts=texts)

    def answer(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        prompts: Sequence[str],
        options: dict[str, str],
        mode: str,
        k: int,
        temperature: float,
        seed: int,
    ) -> list[Answer]:
        """A judge's answers: the one call a judge run makes (judging/services/labels.py)."""
        return self.implementation().answer(
            language_model=language_model,
            loaded=loaded,
            prompts=prompts,
            options=options,
            mode=mode,
            k=k,
            temperature=temperature,
            seed=seed,
        )


def _serves_problem(engine: Engine, language_model: LanguageModel) -> str:
    others = [other.name for other in ENGINES.values() if language_model.source_kind in other.serves]
    what = "an endpoint" if language_model.is_endpoint else f"a {language_model.source_kind} model"
    if not others:
        return f"model {language_model.name} is {what}: no engine runs it"
    return (
        f"model {language_model.name} is {what}, which the {engine.name} engine does not run; use {' or '.join(others)}"
    )


ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Engine(name="hf", engine_path="generation.engines.hf.engine:HfEngine", stoppable=True, samples_groups=True),
        Engine(
            name="vllm",
            engine_path="generation.engines.vllm:VllmEngine",
            problem_path="generation.engines.vllm:vllm_job_problem",
            package="vllm",
            install_hint="install requirements-gpu.txt on a GPU host (docs/operations.md, 'GPU workers and engines'), "
            "or choose the hf engine",
            queue_setting="CONCORD_VLLM_QUEUE",
        ),
        Engine(
            name="endpoint",
            engine_path="generation.engines.endpoint.engine:EndpointEngine",
            serves=("api",),
            problem_path="generation.engines.endpoint.engine:endpoint_job_problem",
            uses_device=False,
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


def engine_name(requested: str | None, language_model: LanguageModel | None = None) -> str:
    """The engine a job runs on: the one it names, else the worker's when that one runs the model, else the first
    engine that does (an endpoint model: `endpoint`)."""
    named = (requested or "").strip().lower()
    if named:
        return named
    default = worker_engine()
    if language_model is None or language_model.source_kind in ENGINES[default].serves:
        return default
    for engine in ENGINES.values():
        if language_model.source_kind in engine.serves:
            return engine.name
    return default


def engine_for(*, engine: str | None, language_model: LanguageModel) -> Engine:
    """The registered engine a job with this model runs on (`engine_name`)."""
    return engine_lookup(engine_name(engine, language_model))


def engine_get(name: str) -> ModelEngine:
    """The implementation of the engine of this name."""
    return engine_lookup(name).implementation()


def engine_installed(name: str) -> bool:
    return engine_lookup(name).installed()


def engine_check(*, engine: str | None, language_model: LanguageModel, num_beams: int = 1, **needs: Any) -> str:
    """The engine a job with these parameters would run on, or EngineUnavailable with the reason. `needs` are what
    the job asks of it beyond sampling: `prob_score` (a generation job's; "none" for none), `judge_mode` (a judge
    run's or check's) and `text_scores` (a causal `pair_score` job's). With CONCORD_ENGINE_CHECK=off (a web host that queues work for workers elsewhere) only what holds
    everywhere is checked: the engine's name, and what the engine cannot do at all."""
    name = engine_name(engine, language_model)
    chosen = engine_lookup(name)
    here = settings.CONCORD_ENGINE_CHECK != "off"
    problem = chosen.problem(language_model=language_model, num_beams=num_beams, here=here, **needs)
    if problem:
        raise EngineUnavailable(problem)
    if here:
        if not chosen.installed():
            raise EngineUnavailable(f"the {name} engine is not installed on this host: {chosen.install_hint}")
        if chosen.uses_device:
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
    loaded: Any,
    contexts: Sequence[str],
    decoding: Sampling,
    seed: int,
    stop: Callable[[], bool] | None = None,
) -> list[list[str]]:
    """Sample with the job's engine (or the worker's): the one sampling call the chunk runner makes per setting. An
    engine that is `stoppable` asks `stop` during the call and raises generation.engines.hf.sampling.Interrupted
    once it turns True."""
    return engine_for(engine=engine, language_model=language_model).sample(
        language_model=language_model, loaded=loaded, contexts=contexts, decoding=decoding, seed=seed, stop=stop
    )
