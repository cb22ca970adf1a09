"""What a study bundle's manifest says about where its data came from: each model's weights (SHA-256, computed once
per file and cached in `WeightsDigest`), each dataset's source files (SHA-256), Concord's version and commit."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

from analysis.models import WeightsDigest
from generation.models import Dataset, LanguageModel

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt")
HASH_BLOCK = 1 << 20


def file_name(path: str) -> str:
    """The last part of a path, written on this server or another (`/srv/data/x.csv` and `C:\\data\\x.csv`: `x.csv`),
    so that no bundle shows where the server keeps its files."""
    parts = [part for part in path.replace("\\", "/").split("/") if part]
    return parts[-1] if parts else ""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(path: Path) -> str:
    """The file's SHA-256, from the cache when the file (resolved path, size, modification time) is unchanged."""
    resolved = path.resolve()
    stat = resolved.stat()
    cached = WeightsDigest.objects.filter(path=str(resolved), size=stat.st_size, mtime_ns=stat.st_mtime_ns).first()
    if cached is not None:
        return cached.sha256
    sha = file_sha256(resolved)
    WeightsDigest.objects.get_or_create(
        path=str(resolved), size=stat.st_size, mtime_ns=stat.st_mtime_ns, defaults={"sha256": sha}
    )
    return sha


def _weight_files(directory: Path, gguf_file: str) -> list[Path]:
    if gguf_file:
        return [directory / gguf_file] if (directory / gguf_file).is_file() else []
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def _hub_snapshot(repo_id: str) -> Path | None:
    """The hub model's local snapshot (its folder is named by the revision), or None when it is not cached here."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, offline, or no such repository: the manifest says "not here"
        return None


def model_provenance(model: LanguageModel) -> dict:
    """The model's id, revision and weight files with their SHA-256; `weights` is empty when the files are not on
    this machine (the manifest then says so rather than guessing)."""
    directory: Path | None = None
    revision = ""
    if model.source_kind == LanguageModel.SourceKind.PACKAGE_GGUF:
        spec = importlib.util.find_spec(model.source)
        if spec is not None and spec.origin is not None:
            directory = Path(spec.origin).parent
            try:
                revision = f"{model.source}=={importlib.metadata.version(model.source)}"
            except importlib.metadata.PackageNotFoundError:
                revision = ""
    elif model.source_kind in (LanguageModel.SourceKind.NONE, LanguageModel.SourceKind.EXTERNAL):
        directory = None  # hand-written texts, or an API model (an external judge's): no weights to hash
    elif model.source_kind == LanguageModel.SourceKind.PATH:
        directory = Path(model.source) if Path(model.source).is_dir() else None
    else:
        directory = _hub_snapshot(model.source)
        revision = directory.name if directory is not None else ""
    files = _weight_files(directory, model.gguf_file) if directory is not None else []
    return {
        "name": model.name,
        # A local folder is the server's: its name only.
        "id": file_name(model.source) if model.source_kind == LanguageModel.SourceKind.PATH else model.source,
        "source_kind": model.source_kind,
        "revision": revision,
        "gguf_file": model.gguf_file,
        "dtype": model.dtype,
        "weights": [{"file": path.name, "sha256": weights_sha256(path)} for path in files],
        "weights_found": bool(files),
    }


def dataset_provenance(dataset: Dataset) -> dict:
    """The dataset's source files with their SHA-256 (where they are still on this machine) and the signature its
    import recorded (the SHA-256 of its files and arguments at import time). Files are named as within the source (a
    file: its name; a folder: the path inside it), never by their place on the server."""
    source = Path(dataset.source)
    if source.is_file():
        paths = [source]
    elif source.is_dir():
        paths = sorted(p for p in source.rglob("*") if p.is_file())
    else:
        paths = []
    return {
        "name": dataset.name,
        "kind": dataset.kind,
        "source": file_name(dataset.source),
        "import_signature": dataset.import_signature,
        "files": [
            {"file": path.name if path == source else path.relative_to(source).as_posix(), "sha256": file_sha256(path)}
            for path in paths
        ],
    }
