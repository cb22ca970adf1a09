"""Uploaded generation files from the pool page and the API: what `import_generations` takes besides the files
(the label set, the positive label, a free-text dataset's codebook), checked before an import is queued, and a look
at the files before anything is written (`preview`): every row is read and checked as the import reads it, and the
first rows come back as they would become items."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile

from annotation.labelset import SCALES, LabelSetError, labels_check
from annotation.models import NOMINAL, Pool
from annotation.services.imports.free_text import Datasets
from annotation.services.imports.reading import Upload, file_rows
from annotation.services.imports.rows import Row
from common.errors import ServiceError
from generation.datasets.files import ImportFailed
from generation.datasets.templates_files import codebook_read
from generation.pronouns import Codebook

GENERATIONS = "generations"
PREVIEW_ROWS = 5
ERRORS_SHOWN = 100


class UploadOptionsError(ServiceError, ValueError):
    """The label set or the codebook sent with generation files cannot be used; the message says why."""

    def body(self) -> dict[str, object]:
        return {"detail": str(self), "errors": []}


def _codebook(name: str, text: str) -> Codebook:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "codebook.csv"
        path.write_text(text, encoding="utf-8")
        return codebook_read(path, shown=name)


def stored_codebook(value: dict | None) -> Codebook | None:
    """The codebook an import job keeps ({"name", "text"}), read again; None: MISGENDERED's."""
    return _codebook(str(value["name"]), str(value["text"])) if value else None


def generation_options(
    *,
    labels: str = "",
    positive: str = "",
    codebook: UploadedFile | None = None,
    scale: str = "",
    positive_at_least: str = "",
) -> dict:
    """The options of an import job (`import_job_create`) from a form's or a request's fields: `labels` comma
    separated (empty: not declared), `positive`, `scale` and `positive_at_least` (empty: not declared), and the
    codebook file. Raises UploadOptionsError."""
    options: dict = {}
    declared = [label.strip() for label in labels.split(",") if label.strip()]
    scale, positive_at_least = scale.strip(), positive_at_least.strip()
    if declared:
        try:
            labels_check(declared, positive.strip(), scale=scale or NOMINAL, positive_at_least=positive_at_least)
        except LabelSetError as exc:
            raise UploadOptionsError(f"labels: {exc}") from None
        options["labels"] = declared
    elif scale and scale not in SCALES:
        raise UploadOptionsError(f"scale: use one of {', '.join(SCALES)}")
    if scale:
        options["scale"] = scale
    if positive_at_least:
        options["positive_at_least"] = positive_at_least
    if positive.strip():
        options["positive"] = positive.strip()  # without labels: checked against the pool's set by the import
    if codebook is not None:
        name = str(codebook.name or "codebook.csv").replace("\x00", "")
        try:
            text = codebook.read().decode("utf-8-sig")
            _codebook(name, text)
        except UnicodeDecodeError:
            raise UploadOptionsError(f"codebook: {name} is not UTF-8 text") from None
        except ImportFailed as exc:
            raise UploadOptionsError(f"codebook: {exc}") from None
        options["codebook"] = {"name": name, "text": text}
    return options


def preview_row(row: Row) -> dict:
    """A generations file's row as the preview shows it."""
    return {
        "file": row.file, "line": row.line, "item": row.external_id, "model": row.model, "dataset": row.dataset,
        "setting": row.setting, "pronoun": row.pronoun, "context": row.context, "generation": row.continuation,
    }  # fmt: skip


def generations_preview(
    *, pool: Pool, kind: str, files: list[UploadedFile | Upload], options: dict | None = None
) -> dict:
    """{"ok", "errors" (FILE:LINE: problem, the first ERRORS_SHOWN), "error_count", "rows" (the first PREVIEW_ROWS),
    "rows_read"}. The rows already in the pool are not told apart here: the import skips them."""
    errors: list[str] = []
    rows: list[dict] = []
    read = 0
    options = options or {}
    datasets = Datasets(stored_codebook(options.get("codebook")))
    labels = list(options.get("labels") or pool.labels)
    for index, upload in enumerate(files):
        if isinstance(upload, Upload):
            source = upload
        else:
            source = Upload(str(upload.name or f"file-{index + 1}.csv").replace("\x00", ""), upload.read())
        for row in file_rows(source, kind=kind, labels=labels, errors=errors, datasets=datasets):
            read += 1
            if len(rows) < PREVIEW_ROWS:
                rows.append(preview_row(row))
        if not isinstance(upload, Upload):
            upload.seek(0)
    return {"ok": not errors, "errors": errors[:ERRORS_SHOWN], "error_count": len(errors), "rows": rows,
            "rows_read": read}  # fmt: skip
