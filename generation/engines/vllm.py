"""The vllm engine: vLLM's offline `LLM` API (docs/operations.md, 'GPU workers and engines').

Each context is one request with `n` = the job's samples, `min_tokens` = `max_tokens` = its new tokens, its top-k and
top-p, the model's other generation defaults (vLLM reads the model's generation config, as transformers does), and a
seed of its own: request i of a chunk gets `request_seed(chunk seed, i)`, where the chunk seed comes from the job's
seed (generation/jobs/generation_kind.py), so a chunk run again asks for the same numbers. Only the new tokens are
decoded, special tokens skipped, as the hf engine does; the rows written are the same.

vLLM reads a model in Hugging Face format. A GGUF model is read from the dequantized copy Concord keeps of it
(`CONCORD_CONVERTED_MODELS_DIR`, made by the worker's HF loader, which scores the chunk before sampling it); a GGUF
model without such a copy (a hub repository of GGUF files, or no directory configured) is refused at job creation.

vLLM is imported only here, and only when a job runs on it: the main environment does not install it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings

from generation.seeds import seed_derive

if TYPE_CHECKING:
    from generation.engines.base import Answer, Sampling, ScoreItem, ScoreResult
    from generation.models import LanguageModel

_llms: dict[tuple, Any] = {}
_lock = threading.Lock()


def request_seed(chunk_seed: int, index: int) -> int:
    """The seed of request `index` of a chunk whose sampling seed is `chunk_seed` (32 bits, as vLLM takes)."""
    return seed_derive(seed=chunk_seed, offset=index)


def vllm_model_problem(*, language_model: LanguageModel) -> str | None:
    """Why vLLM cannot read this model, or None."""
    if not language_model.gguf_file:
        return None
    if language_model.source_kind == language_model.SourceKind.HUB:
        return (
            f"model {language_model.name} is a GGUF file of a hub repository, which the vllm engine cannot read; "
            f"register the repository's Hugging Face weights (or a local copy), or use the hf engine"
        )
    if not settings.CONCORD_CONVERTED_MODELS_DIR:
        return (
            f"model {language_model.name} is GGUF only: the vllm engine reads the dequantized copy that the worker "
            f"keeps in CONCORD_CONVERTED_MODELS_DIR, which is not set; set it, or use the hf engine"
        )
    return None


def vllm_job_problem(*, language_model: LanguageModel, num_beams: int, **needs: Any) -> str | None:
    """Why the vllm engine cannot run a job with this model and beams on any host, or None (its `Engine` entry's
    check at job creation, generation/engines/__init__.py)."""
    if num_beams != 1:
        return "the vllm engine samples with one beam (num_beams 1); use the hf engine for beams"
    if language_model.load_in_4bit:
        return (
            f"model {language_model.name} is loaded in 4 bits with bitsandbytes, which the hf engine does; "
            f"register an unquantized copy for vllm"
        )
    return vllm_model_problem(language_model=language_model)


def vllm_model_path(*, language_model: LanguageModel) -> str:
    """The Hugging Face-format directory or hub id vLLM loads for this model."""
    from generation.engines.hf.loading import ModelLoadError, _dtype, converted_directory, model_source, resolve_device

    problem = vllm_model_problem(language_model=language_model)
    if problem:
        raise ModelLoadError(problem)
    source, _extra = model_source(language_model=language_model)
    if not language_model.gguf_file:
        return source
    dtype = _dtype(language_model.dtype, resolve_device(language_model.device))
    directory = converted_directory(language_model=language_model, source=source, dtype=dtype)
    if directory is None or not (directory / "concord-converted.json").is_file():
        raise ModelLoadError(
            f"model {language_model.name}: no dequantized copy in {directory} yet (the HF loader writes it when it "
            f"first loads the model)"
        )
    return str(directory)


def vllm_options() -> dict[str, Any]:
    """Extra `LLM(...)` arguments from CONCORD_VLLM_OPTIONS (a JSON object, e.g. {"gpu_memory_utilization": 0.85})."""
    raw = settings.CONCORD_VLLM_OPTIONS
    if not raw.strip():
        return {}
    options = json.loads(raw)
    if not isinstance(options, dict):
        raise ValueError(f"CONCORD_VLLM_OPTIONS must be a JSON object, got {raw[:60]!r}")
    return options


def vllm_llm(*, language_model: LanguageModel):
    """The process's `vllm.LLM` for this model, made once (loading takes seconds to minutes)."""
    path = vllm_model_path(language_model=language_model)
    options = vllm_options()
    key = (language_model.name, path, language_model.dtype, json.dumps(options, sort_keys=True))
    with _lock:
        llm = _llms.get(key)
        if llm is None:
            from vllm import LLM

            dtype = language_model.dtype if language_model.dtype != "auto" else "auto"
            llm = _llms[key] = LLM(model=path, tokenizer=path, dtype=dtype, **options)
        return llm


def sampling_params(*, llm, decoding: Sampling, seed: int):
    """One request's sampling parameters: the model's generation defaults, then the job's decoding and the seed."""
    from vllm import SamplingParams

    defaults: dict[str, Any] = {}
    get_defaults = getattr(llm, "get_default_sampling_params", None)
    if get_defaults is not None:
        base = get_defaults()
        for name in ("temperature", "repetition_penalty", "min_p"):
            value = getattr(base, name, None)
            if value is not None:
                defaults[name] = value
    return SamplingParams(
        **defaults,
        n=decoding.samples,
        min_tokens=decoding.max_new_tokens,
        max_tokens=decoding.max_new_tokens,
        top_k=decoding.top_k if decoding.top_k > 0 else -1,
        top_p=decoding.top_p,
        seed=seed,
        skip_special_tokens=True,
    )


class VllmEngine:
    """vLLM samples; probability scoring, a judge's answers and text scores run on the hf engine, whose model is loaded only when
    a chunk needs them (a job with `prob_score` none never loads it, unless a GGUF model needs its dequantized copy
    made)."""

    name = "vllm"

    def load(self, *, language_model: LanguageModel, job_id: int | None = None) -> None:
        if language_model.gguf_file:
            from generation.engines.hf.loading import ModelLoadError

            try:
                vllm_model_path(language_model=language_model)
            except ModelLoadError:
                _hf().load(language_model=language_model)  # writes the dequantized copy vLLM reads
        return None

    def sample(
        self,
        *,
        language_model: LanguageModel,
        loaded: Any,
        contexts: Sequence[str],
        decoding: Sampling,
        seed: int,
    ) -> list[list[str]]:
        if decoding.num_beams != 1:
            raise ValueError("the vllm engine samples with one beam (num_beams 1)")
        llm = vllm_llm(language_model=language_model)
        params = [
            sampling_params(llm=llm, decoding=decoding, seed=request_seed(seed, index))
            for index in range(len(contexts))
        ]
        outputs = llm.generate(list(contexts), sampling_params=params, use_tqdm=False)
        # vLLM answers in request order; each output's completions in index order.
        return [[completion.text for completion in sorted(out.outputs, key=lambda c: c.index)] for out in outputs]

    def score(self, *, language_model: LanguageModel, loaded: Any, items: Sequence[ScoreItem]) -> list[ScoreResult]:
        hf = _hf()
        return hf.score(language_model=language_model, loaded=hf.load(language_model=language_model), items=items)

    def answer(self, *, language_model: LanguageModel, loaded: Any, **question: Any) -> list[Answer]:
        hf = _hf()
        return hf.answer(language_model=language_model, loaded=hf.load(language_model=language_model), **question)

    def score_texts(self, *, language_model: LanguageModel, loaded: Any, texts: Sequence[str]) -> list[float]:
        hf = _hf()
        return hf.score_texts(language_model=language_model, loaded=hf.load(language_model=language_model), texts=texts)


def _hf():
    from generation.engines.hf.engine import HfEngine

    return HfEngine()
