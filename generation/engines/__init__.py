"""Generation engines: who samples a job's continuations (docs/operations.md, 'GPU workers and engines').

- `hf` (the default): transformers' `generate`, batched, in the worker's own process (generation/sampling.py);
- `vllm`: vLLM's offline `LLM` API, for GPU hosts (generation/engines/vllm.py).

A job names its engine (the `engine` parameter: form, API, `generate --engine`); a job that names none runs on the
worker's engine, `CONCORD_ENGINE` (default hf). Both engines store the same rows: the continuation alone, special
tokens skipped, chunk by chunk, each chunk's sampling seeded from the job's seed so that a re-run chunk writes the
same text. Probability scoring always runs on the prefix-shared HF scorer (generation/scoring.py).

`engine_check` is what job creation calls: an engine that is not installed, vLLM with a model it cannot read (GGUF
only) or with beam search, and a device this host does not have are refused there, with a message, instead of
failing the job later.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from django.conf import settings

if TYPE_CHECKING:
    from generation.loading import LoadedModel
    from generation.models import LanguageModel
    from generation.sampling import Decoding

HF, VLLM = "hf", "vllm"
ENGINES = (HF, VLLM)


class EngineUnavailable(ValueError):
    """The engine cannot run this job here; the message says why and what to do."""


class Engine(Protocol):
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


def worker_engine() -> str:
    """This worker's engine for jobs that name none: CONCORD_ENGINE (default hf)."""
    name = settings.CONCORD_ENGINE
    if name not in ENGINES:
        raise EngineUnavailable(f"CONCORD_ENGINE={name!r} is not an engine: use one of {', '.join(ENGINES)}")
    return name


def engine_name(requested: str | None) -> str:
    """The engine a job runs on: the one it names, else the worker's."""
    return (requested or "").strip().lower() or worker_engine()


def engine_get(name: str) -> Engine:
    if name == HF:
        from generation.engines.hf import HfEngine

        return HfEngine()
    if name == VLLM:
        from generation.engines.vllm import VllmEngine

        return VllmEngine()
    raise EngineUnavailable(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")


def engine_installed(name: str) -> bool:
    return name == HF or importlib.util.find_spec("vllm") is not None


def engine_check(*, engine: str | None, language_model: LanguageModel, num_beams: int = 1) -> str:
    """The engine a job with these parameters would run on, or EngineUnavailable with the reason. With
    CONCORD_ENGINE_CHECK=off (a web host that queues work for workers elsewhere) only what holds everywhere is checked:
    the engine's name, and what vLLM cannot do at all."""
    name = engine_name(engine)
    if name not in ENGINES:
        raise EngineUnavailable(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")
    local = settings.CONCORD_ENGINE_CHECK != "off"
    if name == VLLM:
        if num_beams != 1:
            raise EngineUnavailable("the vllm engine samples with one beam (num_beams 1); use the hf engine for beams")
        if language_model.load_in_4bit:
            raise EngineUnavailable(
                f"model {language_model.name} is loaded in 4 bits with bitsandbytes, which the hf engine does; "
                f"register an unquantized copy for vllm"
            )
        from generation.engines.vllm import vllm_model_problem

        problem = vllm_model_problem(language_model=language_model)
        if problem:
            raise EngineUnavailable(problem)
    if local:
        if not engine_installed(name):
            raise EngineUnavailable(
                "the vllm engine is not installed on this host: install requirements-gpu.txt on a GPU host "
                "(docs/operations.md, 'GPU workers and engines'), or choose the hf engine"
            )
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
) -> list[list[str]]:
    """Sample with the job's engine (or the worker's): the one call the chunk runner makes."""
    return engine_get(engine_name(engine)).sample(
        language_model=language_model, loaded=loaded, contexts=contexts, decoding=decoding, seed=seed
    )
