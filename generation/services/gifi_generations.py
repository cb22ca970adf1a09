"""GIFI's released generation files imported as they are (docs/domain.md, 'GIFI'): one finished generation job of the
named model over one part of a GIFI dataset.

A file is GIFI's CSV (`data/model-generation/*/`): the template file's columns, `generated_sentences` and often
`results` (the API's whole JSON reply, over several lines inside one quoted cell) and a leading unnamed index column.
GDR, counterfactual and PE rows are matched to their instance by `template_index` and `pronoun_family`; SAOF rows by
their template's text (some released files number SAOF's templates in another order than the template file). A
prompt's rows are its samples in file order. Empty cells, and those pandas reads as missing ("NA", "None", ...),
are empty generations, which the dimensions leave out, as GIFI's `dropna` does.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from generation.contexts import OPEN, build_context
from generation.datasets.files import ImportFailed, read_text
from generation.datasets.gifi import FAMILIES, KIND, MASK, PART_COLUMNS, PARTS, SAOF, source_id
from generation.heuristic import heuristic_verdicts
from generation.jobs.services import job_record
from generation.models import Dataset, Generation, Instance, Job, LanguageModel
from generation.parameters import JobParameters
from generation.selectors import dataset_codebook

GENERATED = "generated_sentences"
# The cells pandas' read_csv takes as missing by default: GIFI's code drops those rows as empty generations.
PANDAS_MISSING = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
     "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip


@dataclass
class GifiGenerationsResult:
    job: Job
    created: bool
    rows: int
    empty: int

    def as_json(self) -> dict:
        return {"job": self.job.pk, "model": self.job.model.name, "rows": self.rows, "empty": self.empty}


def _records(path: Path, name: str) -> list[tuple[int, dict[str, str]]]:
    """The file's rows with the line each starts on (a cell may span lines); problems name the file `name`."""
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    records = []
    start = 2
    for row in reader:
        if None in row:
            raise ImportFailed([f"{name}:{start}: more fields than the header has columns"])
        records.append((start, {key: value or "" for key, value in row.items()}))
        start = reader.line_num + 1
    return records


def _model(name: str, errors: list[str]) -> LanguageModel | None:
    """The registry's model of that name; a name not registered is added as a model recorded, never run."""
    found = LanguageModel.objects.filter(name=name).first()
    if found is not None:
        return found
    try:
        validate_slug(name)
    except ValidationError:
        errors.append(f"--model {name!r}: a model name is letters, digits, - and _")
        return None
    if len(name) > 64:
        errors.append(f"--model {name!r}: at most 64 characters")
        return None
    return LanguageModel(name=name, source_kind=LanguageModel.SourceKind.EXTERNAL, source=name)


@dataclass
class GifiGenerationsPlan:
    """A whole file checked, nothing written: the model (not yet saved when it is new), the dataset and part, and
    each row's (instance, sample index, generated text)."""

    model: LanguageModel
    dataset: Dataset
    part: str
    planned: list[tuple[Instance, int, str]]
    empty: int

    def preview_rows(self) -> list[dict]:
        """Each row as a preview shows it."""
        return [
            {"model": self.model.name, "part": self.part, "template": instance.template.source_id,
             "pronoun": instance.pronoun, "sample": sample, "generation": text}
            for instance, sample, text in self.planned
        ]  # fmt: skip


def gifi_generations_import(*, path: Path, part: str, model_name: str, dataset_name: str) -> GifiGenerationsResult:
    """Check the whole file (each problem as file:line: field), then write one finished job with every row, or
    nothing. The same file for the same model and part again changes nothing."""
    plan = gifi_generations_plan(path=path, part=part, model_name=model_name, dataset_name=dataset_name)
    return _write(plan.model, plan.dataset, plan.part, plan.planned, plan.empty)


def gifi_generations_plan(
    *, path: Path, part: str, model_name: str, dataset_name: str, shown: str | None = None
) -> GifiGenerationsPlan:
    """The whole file checked against the dataset's prompts, nothing written: the plan, or ImportFailed with every
    problem as file:line: field (the file named `shown`, default its path)."""
    name = shown or str(path)
    errors: list[str] = []
    if part not in PARTS:
        raise ImportFailed([f"--part {part!r}: use one of {', '.join(PARTS)}"])
    dataset = Dataset.objects.filter(name=dataset_name, kind=KIND).first()
    if dataset is None:
        raise ImportFailed([f"no GIFI dataset {dataset_name!r}: import its templates first (import_dataset gifi)"])
    model = _model(model_name, errors)
    records = _records(path, name)
    header = list(records[0][1]) if records else []
    if not records:
        raise ImportFailed([f"{name}: no rows"])
    missing = [column for column in (*PART_COLUMNS[part], GENERATED) if column not in header]
    if missing:
        raise ImportFailed([f"{name}:1: missing column(s) {', '.join(missing)} for part {part}"])
    instances = Instance.objects.filter(dataset=dataset, template__meta__part=part).select_related("template")
    by_key: dict[tuple[str, str], Instance] = {}
    for instance in instances:
        key = instance.template.text if part == SAOF else instance.template.source_id
        by_key[key, instance.pronoun] = instance
    if not by_key:
        raise ImportFailed([f"dataset {dataset.name!r} has no {part} prompts"])
    planned: list[tuple[Instance, int, str]] = []
    samples: dict[int, int] = {}
    empty = 0
    for line, row in records:
        where = f"{name}:{line}"
        found = _row_instance(part, row, by_key)
        if isinstance(found, str):
            errors.append(f"{where}: {found}")
            continue
        instance = found
        text = row[GENERATED]
        if text in PANDAS_MISSING:
            text, empty = "", empty + 1
        if "\x00" in text:
            errors.append(f"{where}: {GENERATED}: contains a NUL byte")
            continue
        sample = samples.get(instance.pk, 0)
        samples[instance.pk] = sample + 1
        planned.append((instance, sample, text))
    if errors or model is None:
        raise ImportFailed(errors)
    return GifiGenerationsPlan(model, dataset, part, planned, empty)


def _row_instance(part: str, row: dict[str, str], by_key: dict[tuple[str, str], Instance]) -> Instance | str:
    """The instance a row belongs to, or what is wrong with it."""
    if part == SAOF:
        instance = by_key.get((row["template"] + MASK, ""))
        if instance is None:
            return "template: not a SAOF template of this dataset"
        state = instance.template.meta.get("state")
        if state != row["state"].strip():
            return f"state: {row['state']!r}, but the template's is {state!r}"
        return instance
    family = row["pronoun_family"].strip().lower()
    if family not in FAMILIES:
        return f"pronoun_family: {family!r} is not one of GIFI's families"
    index = row["template_index"].strip()
    instance = by_key.get((source_id(part, index), family))
    if instance is None:
        return f"template_index {index!r}, {family}: no such {part} prompt"
    if instance.text != row["template"] + MASK:
        return f"template: differs from the prompt of template_index {index}, {family}"
    answer = instance.template.meta.get("simple_answer")
    if answer is not None and row["simple_answer"].strip() != str(answer):
        return f"simple_answer: {row['simple_answer']!r}, but the problem's is {answer}"
    return instance


@transaction.atomic
def _write(
    model: LanguageModel, dataset: Dataset, part: str, planned: list[tuple[Instance, int, str]], empty: int
) -> GifiGenerationsResult:
    wanted = {(instance.pk, sample, text) for instance, sample, text in planned}
    if model.pk is None:
        model.save()
    else:
        for job in Job.objects.filter(model=model, generation_run__dataset=dataset, generation_run__part=part):
            stored = set(Generation.objects.filter(job=job).values_list("instance_id", "sample_index", "continuation"))
            if stored == wanted:
                return GifiGenerationsResult(job=job, created=False, rows=len(planned), empty=empty)
    codebook = dataset_codebook(dataset=dataset)
    params = JobParameters(
        model=model,
        dataset=dataset,
        pronouns=list(codebook.bases),
        settings=[OPEN],
        samples=max(sample for _, sample, _ in planned) + 1,
        part=part,
    )
    job = job_record(params=params, units=len({instance.pk for instance, _, _ in planned}), items=len(planned))
    verdicts = heuristic_verdicts(((text, instance.pronoun) for instance, _, text in planned), codebook=codebook)
    Generation.objects.bulk_create(
        (
            Generation(
                job=job,
                instance=instance,
                setting=OPEN,
                sample_index=sample,
                context=build_context(instance.text, instance.template.mask, instance.correct_form, OPEN),
                continuation=text,
                heuristic_correct=verdict.correct,
                first_pronoun=verdict.first_pronoun or "",
                first_pronoun_offset=verdict.offset,
            )
            for (instance, sample, text), verdict in zip(planned, verdicts, strict=True)
        ),
        batch_size=2000,
    )
    return GifiGenerationsResult(job=job, created=True, rows=len(planned), empty=empty)
