"""The import formats, one entry each (docs/domain.md, "Bring your own study"): a format's name (what an upload's
`kind` or `import_generations --format` gives), its title, its options (a DRF serializer that checks them), its
parser (one file's rows as the preview shows them, and its problems as `FILE:LINE: field: problem`), its preview
(the first rows and what the import would do; nothing written) and its run (the import itself).

The pages, the API (`POST /api/pools/{name}/imports/`) and `import_generations` look a format up here and call its
entry; none of them compares a format's name. A new format is one entry, registered with `import_format_register`
(an app that annotation may not import registers its own at start-up: judging's `judge_labels`, judging/hooks.py).

- `generations` (also given as the item kind `study`, `gold` or `training`): generation files into a pool, the
  released sample format or free-text generations as CSV or JSON Lines, told apart by the file itself
  (annotation/services/imports/reading.py); queued as a background import.
- `labels`: people's labels, long or wide (annotation/services/label_import.py); written at once.
- `judge_labels`: an external judge's labels (judging/services/imports.py); written at once.
- `gifi`: GIFI's released generation files as one finished job of a model over a part of a GIFI dataset, without a
  pool (generation/services/gifi_generations.py; `import_generations --format gifi`).

Datasets (`import_dataset KIND`) have their catalog in generation/datasets/registry.py (`DATASET_KINDS`), one
`DatasetKindSpec` per kind with its command entry.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rest_framework import serializers

from annotation.labelset import SCALES
from annotation.models import GOLD, STUDY, TRAINING, Pool
from annotation.services.imports.reading import Source, Upload, file_rows
from annotation.services.label_files import LabelImportError
from annotation.services.preview import (
    ERRORS_SHOWN,
    GENERATIONS,
    PREVIEW_ROWS,
    UploadOptionsError,
    generation_options,
    preview_row,
    stored_codebook,
)
from generation.datasets.gifi import NAME as GIFI

LABELS = "labels"
JUDGE_LABELS = "judge_labels"
POOL_IMPORT = "import"  # the pool page's section of generation files
POOL_LABELS = "labels"  # the pool page's section of label files


class UnknownImportFormat(ValueError):
    """No format of that name; the message lists the known ones."""


@dataclass(frozen=True)
class Parsed:
    """One file as a format reads it: its rows as the preview shows them, and every problem (nothing written)."""

    rows: list[dict]
    errors: list[str]


@dataclass(frozen=True)
class ImportOutcome:
    """What a run did: `summary` (written now), or `job` (queued: it runs in the background), and the page's line."""

    message: str
    summary: dict = field(default_factory=dict)
    job: Any = None


@dataclass(frozen=True)
class ImportFormat:
    """One import format.

    name: what an upload's `kind` or `--format` gives; kinds: the other names that mean it, each with the item kind
        it gives (`generations` as `study`, `gold`, `training`).
    options: the DRF serializer of its own options; `options_from` checks them (UploadOptionsError) and gives the
        dict that `parse`, `preview` and `run` take.
    parse(target, source, options, kind): one file's rows and problems, nothing written.
    preview(target, files, options, kind): {"ok", "errors", "rows", and the counts the import would give}.
    run(target, files, options, kind, user): the import (ImportOutcome), or its error (nothing written).
    one_file: it takes exactly one file; into_pool: it imports into a pool (the target), else into no pool (None);
    section: the pool page's form that takes it (POOL_IMPORT, POOL_LABELS; "" for none).
    """

    name: str
    title: str
    options: type[serializers.Serializer]
    parse: Callable[..., Parsed]
    preview: Callable[..., dict]
    run: Callable[..., ImportOutcome]
    kinds: Mapping[str, str] = field(default_factory=dict)
    one_file: bool = False
    into_pool: bool = True
    section: str = ""

    def options_from(self, data: Mapping[str, Any]) -> dict:
        """The format's options out of a request's, a form's or a command's values (the others left out), checked:
        UploadOptionsError names the field and the problem."""
        fields = self.options().get_fields()
        given = {key: data[key] for key in fields if key in data and data[key] is not None}
        serializer = self.options(data=given)
        if not serializer.is_valid():
            name, problems = next(iter(serializer.errors.items()))
            problem = problems[0] if isinstance(problems, list) else problems
            raise UploadOptionsError(str(problem) if name == "non_field_errors" else f"{name}: {problem}")
        return dict(serializer.validated_data)


_formats: dict[str, ImportFormat] = {}


def import_format_register(entry: ImportFormat) -> None:
    _formats[entry.name] = entry


def import_formats(*, section: str | None = None, into_pool: bool | None = None) -> list[ImportFormat]:
    """The formats in the order they were registered; only those of a page's `section` or of `into_pool`."""
    return [
        entry
        for entry in _formats.values()
        if (section is None or entry.section == section) and (into_pool is None or entry.into_pool == into_pool)
    ]


def import_kinds() -> list[str]:
    """Every name an upload's `kind` may give: each format's name and the names that also mean it."""
    return [name for entry in _formats.values() for name in (entry.name, *entry.kinds) if name]


def import_format(name: str) -> ImportFormat:
    """The format an upload's `kind` (or `--format`) names; UnknownImportFormat, listing the known names, else."""
    for entry in _formats.values():
        if name == entry.name or name in entry.kinds:
            return entry
    raise UnknownImportFormat(f"unknown import format {name!r}; known: {', '.join(import_kinds())}")


def _name(upload, index: int, default: str) -> str:
    return str(getattr(upload, "name", "") or default.format(index + 1)).replace("\x00", "")


def upload_of(upload, index: int = 0, default: str = "upload.csv") -> Upload:
    """A Django upload (or an Upload already) as an Upload in memory."""
    if isinstance(upload, Upload):
        return upload
    return Upload(_name(upload, index, default), upload.read())


# -- generations -------------------------------------------------------------------------------------------------


class GenerationOptions(serializers.Serializer):
    labels = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="generations: the pool's label set, comma separated"
    )
    positive = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="generations: the label rates count (a set without misgendering)",
    )  # fmt: skip
    scale = serializers.ChoiceField(
        choices=["", *SCALES], required=False, default="", help_text="generations: nominal, ordinal or interval"
    )
    positive_at_least = serializers.CharField(
        required=False, allow_blank=True, default="",
        help_text="generations, ordinal or interval: rates count labels at or above this one",
    )  # fmt: skip
    codebook = serializers.FileField(
        required=False, help_text="generations: a free-text dataset's codebook (default MISGENDERED's)"
    )

    def validate(self, attrs):
        """The options an import job keeps (annotation/services/preview.py's `generation_options`)."""
        try:
            return generation_options(**attrs)
        except UploadOptionsError as exc:
            raise serializers.ValidationError(str(exc)) from None


GENERATION_KINDS = {GENERATIONS: STUDY, STUDY: STUDY, GOLD: GOLD, TRAINING: TRAINING}


def _item_kind(kind: str | None) -> str:
    return GENERATION_KINDS.get(kind or STUDY, kind or STUDY)


def _generations_parse(pool: Pool, source: Source, options: dict, kind: str | None = None) -> Parsed:
    from annotation.services.imports.free_text import Datasets

    errors: list[str] = []
    labels = list(options.get("labels") or pool.labels)
    datasets = Datasets(stored_codebook(options.get("codebook")))
    rows = file_rows(source, kind=_item_kind(kind), labels=labels, errors=errors, datasets=datasets)
    return Parsed([preview_row(row) for row in rows], errors)


def _generations_preview(pool: Pool, files: list, options: dict, kind: str | None = None) -> dict:
    from annotation.services.preview import generations_preview

    return generations_preview(pool=pool, kind=_item_kind(kind), files=files, options=options)


def _generations_run(pool: Pool, files: list, options: dict, kind: str | None = None, user=None) -> ImportOutcome:
    from annotation.services.imports.jobs import import_job_create

    job = import_job_create(pool=pool, kind=_item_kind(kind), files=files, created_by=user, options=options)
    return ImportOutcome(message=f"Import {job.pk} queued: {', '.join(job.file_names)}. Its state is below.", job=job)


import_format_register(
    ImportFormat(
        name=GENERATIONS,
        title="generations",
        options=GenerationOptions,
        parse=_generations_parse,
        preview=_generations_preview,
        run=_generations_run,
        kinds={STUDY: STUDY, GOLD: GOLD, TRAINING: TRAINING},
        section=POOL_IMPORT,
    )
)


# -- people's labels ---------------------------------------------------------------------------------------------


class LabelOptions(serializers.Serializer):
    wide = serializers.BooleanField(default=False, help_text="labels: item and one column per annotator")
    replace = serializers.BooleanField(default=False, help_text="labels: overwrite contradicted stored labels")


def _labels_parse(pool: Pool, source: Source, options: dict, kind: str | None = None) -> Parsed:
    from annotation.services.label_import import labels_plan

    try:
        plan = labels_plan(source=source, pool=pool, wide=options["wide"], replace=options["replace"])
    except LabelImportError as exc:
        return Parsed([], exc.errors)
    return Parsed([row.preview() for row in plan.rows], [])


def _labels_preview(pool: Pool, files: list, options: dict, kind: str | None = None) -> dict:
    from annotation.services.label_import import labels_preview

    return labels_preview(source=upload_of(files[0]), pool=pool, wide=options["wide"], replace=options["replace"])


def _labels_run(pool: Pool, files: list, options: dict, kind: str | None = None, user=None) -> ImportOutcome:
    from annotation.services.label_import import labels_import

    plan = labels_import(
        source=upload_of(files[0]), pool_name=pool.name, wide=options["wide"], replace=options["replace"],
        created_by=user,
    )  # fmt: skip
    summary = plan.summary()
    return ImportOutcome(
        message=(
            f"{summary['file']}: {summary['rows']} labels by {summary['annotators']} annotators: {summary['new']} "
            f"new, {summary['replaced']} replaced, {summary['completed']} completed, {summary['unchanged']} already "
            "there."
        ),
        summary=summary,
    )


import_format_register(
    ImportFormat(
        name=LABELS,
        title="people's labels",
        options=LabelOptions,
        parse=_labels_parse,
        preview=_labels_preview,
        run=_labels_run,
        one_file=True,
        section=POOL_LABELS,
    )
)


# -- GIFI's released generation files ----------------------------------------------------------------------------


class GifiOptions(serializers.Serializer):
    part = serializers.CharField(help_text="gifi: the part the file holds")
    model = serializers.CharField(help_text="gifi: the model that wrote it (added when not registered)")
    dataset = serializers.CharField(default=GIFI, help_text="gifi: the GIFI dataset")

    def validate_part(self, value: str) -> str:
        from generation.datasets.gifi import PARTS

        if value not in PARTS:
            raise serializers.ValidationError(f"{value!r}: use one of {', '.join(PARTS)}")
        return value


def _as_path(source: Source, folder: str) -> Path:
    """A file GIFI's reader can open: the path itself, or the upload written into `folder`."""
    if isinstance(source, Path):
        return source
    path = Path(folder) / Path(source.name).name
    if isinstance(source, Upload):
        path.write_bytes(source.content)
    else:
        with source.open() as handle:
            path.write_bytes(handle.read())
    return path


def _gifi_plan(source: Source, options: dict):
    from generation.services.gifi_generations import gifi_generations_plan

    with tempfile.TemporaryDirectory() as folder:
        return gifi_generations_plan(
            path=_as_path(source, folder), part=options["part"], model_name=options["model"],
            dataset_name=options["dataset"], shown=str(source) if isinstance(source, Path) else source.name,
        )  # fmt: skip


def _gifi_parse(target: None, source: Source, options: dict, kind: str | None = None) -> Parsed:
    from generation.datasets.files import ImportFailed

    try:
        plan = _gifi_plan(source, options)
    except ImportFailed as exc:
        return Parsed([], list(exc.errors))
    return Parsed(plan.preview_rows(), [])


def _gifi_preview(target: None, files: list, options: dict, kind: str | None = None) -> dict:
    rows: list[dict] = []
    errors: list[str] = []
    read = 0
    for index, upload in enumerate(files):
        parsed = _gifi_parse(None, upload if isinstance(upload, Path) else upload_of(upload, index), options)
        read += len(parsed.rows)
        rows += parsed.rows[: PREVIEW_ROWS - len(rows)]
        errors += parsed.errors
    return {"ok": not errors, "errors": errors[:ERRORS_SHOWN], "error_count": len(errors), "rows": rows,
            "rows_read": read}  # fmt: skip


def _gifi_run(target: None, files: Iterable, options: dict, kind: str | None = None, user=None) -> ImportOutcome:
    """Each file in turn, each one finished job or nothing (ImportFailed); `summary["results"]` holds each file's
    GifiGenerationsResult."""
    from generation.services.gifi_generations import gifi_generations_import

    results = []
    for path in files:
        results.append(
            gifi_generations_import(
                path=Path(path), part=options["part"], model_name=options["model"], dataset_name=options["dataset"]
            )
        )
    return ImportOutcome(message=f"{len(results)} GIFI files imported", summary={"results": results})


import_format_register(
    ImportFormat(
        name=GIFI,
        title="GIFI's released generation files",
        options=GifiOptions,
        parse=_gifi_parse,
        preview=_gifi_preview,
        run=_gifi_run,
        into_pool=False,
    )
)


__all__ = [
    "GIFI",
    "JUDGE_LABELS",
    "LABELS",
    "POOL_IMPORT",
    "POOL_LABELS",
    "ImportFormat",
    "ImportOutcome",
    "Parsed",
    "UnknownImportFormat",
    "import_format",
    "import_format_register",
    "import_formats",
    "import_kinds",
    "upload_of",
]
