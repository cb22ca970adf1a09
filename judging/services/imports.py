"""Importing an external judge's labels (docs/domain.md, "Bring your own study").

A file has `item, label` and optionally `prob_<label>` for every label of the pool's set (summing to 1 within 1e-6)
or `confidence` in [0, 1]. The labels belong to an **external judge**: a name, a model id (`gpt-4o`), a description
and the prompt as text, which Concord records and never runs (its model is registered with source kind `external`;
`judge_run_create` refuses it). Each import is one judge run with origin `imported` over the pool: its job is a
finished record of kind `judge` that no worker picks up, so every page, export and table that reads judge runs
reads it too. A label's `scores` hold its probabilities (empty without them); its confidence is the largest
probability, else the given confidence, else none.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.text import slugify

from annotation.labelset import LabelSetError, labels_check
from annotation.models import Pool
from annotation.schema import label_display
from annotation.services.imports.reading import source_name
from annotation.services.label_files import LabelImportError, Source, pool_items_named, table_read
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from generation.models import LanguageModel
from judging.models import RUN_IMPORTED, Judge, JudgeMode, JudgeRun, MachineLabel
from judging.services.judges import NAME, judge_latest
from judging.services.runs import imported_run_record

TOLERANCE = 1e-6
NO_PROMPT = "(the prompt was not given)"
BATCH = 5_000
PREVIEW_ROWS = 5
MODEL_ID = re.compile(r"^\S{1,200}$")


@dataclass(frozen=True)
class JudgeLabelRow:
    line: int
    item: str
    label: str
    probabilities: dict[str, float]  # empty: none given
    confidence: float | None

    def preview(self) -> dict:
        return {
            "line": self.line, "item": self.item, "label": self.label, "confidence": self.confidence,
            **{f"prob_{label}": value for label, value in self.probabilities.items()},
        }  # fmt: skip


@dataclass
class JudgeLabelsPlan:
    pool: Pool
    file: str
    rows: list[tuple[JudgeLabelRow, int]] = field(default_factory=list)  # (row, item id)
    new_labels: list[str] = field(default_factory=list)  # `extend_labels`: the file's labels the pool gains
    unchanged: bool = False  # the same labels were imported for the same judge version before: nothing written

    def summary(self) -> dict:
        with_probabilities = sum(1 for row, _ in self.rows if row.probabilities)
        with_confidence = sum(1 for row, _ in self.rows if row.confidence is not None)
        return {
            "pool": self.pool.name, "file": self.file, "labels": len(self.rows),
            "with_probabilities": with_probabilities, "with_confidence": with_confidence,
            "new_labels": list(self.new_labels), "already_imported": self.unchanged,
        }  # fmt: skip

    def digest(self) -> str:
        """The labels as read, whatever the file's name or the order of its rows: the same file imported again
        finds the run it made (docs/domain.md, "Bring your own study")."""
        content = sorted(
            [item_id, row.label, sorted(row.probabilities.items()), row.confidence] for row, item_id in self.rows
        )
        return hashlib.sha256(json.dumps(content, default=str).encode()).hexdigest()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _header_problems(header: list[str], labels: list[str]) -> list[str]:
    probability_columns = [column for column in header if column.startswith("prob_")]
    outside = [column for column in probability_columns if column[len("prob_") :] not in labels]
    problems = []
    if missing := [column for column in ("item", "label") if column not in header]:
        problems.append(f"missing column(s): {', '.join(missing)}")
    if outside:
        problems.append(f"{', '.join(outside)}: not a label of the pool ({', '.join(labels)})")
    elif probability_columns and len(probability_columns) != len(labels):
        absent = [f"prob_{label}" for label in labels if f"prob_{label}" not in probability_columns]
        problems.append(f"probabilities need a column for every label: missing {', '.join(absent)}")
    if probability_columns and "confidence" in header:
        problems.append("give prob_<label> columns or confidence, not both")
    known = {"item", "label", "confidence", *probability_columns}
    if unknown := [column for column in header if column not in known]:
        problems.append(f"unknown column(s): {', '.join(unknown)} (item, label, prob_<label>, confidence)")
    return problems


def _probabilities(record: dict[str, str], labels: list[str], problems: list[str]) -> dict[str, float]:
    """The row's probabilities, checked: each in [0, 1], summing to 1 within TOLERANCE."""
    probabilities: dict[str, float] = {}
    for label in labels:
        text = record.get(f"prob_{label}", "")
        value = _number(text)
        if value is None or not 0 <= value <= 1:
            problems.append(f"prob_{label}: must be a number in [0, 1], got {text!r}")
        else:
            probabilities[label] = value
    if len(probabilities) == len(labels):
        total = math.fsum(probabilities.values())
        if abs(total - 1) > TOLERANCE:
            problems.append(f"the probabilities sum to {total:.9g}, not 1 (within {TOLERANCE:g})")
    return probabilities


def _confidence(text: str, problems: list[str]) -> float | None:
    value = _number(text) if text else None
    if text and (value is None or not 0 <= value <= 1):
        problems.append(f"confidence: must be a number in [0, 1], got {text!r}")
    return value


def _extension(table, pool: Pool) -> list[str]:
    """The file's labels outside the pool's set, in the order they first occur; refused (LabelImportError) where the
    pool cannot take them: not a label (labels_check's rules), or not a number on an interval pool."""
    known = set(pool.labels)
    new: list[str] = []
    for _, record in table.records:
        label = record.get("label", "")
        if label and label not in known and label not in new:
            new.append(label)
    if new:
        try:
            labels_check([*pool.labels, *new], scale=pool.scale)
        except LabelSetError as exc:
            raise LabelImportError([f"{table.name}: --extend-labels: {exc}"]) from None
    return new


def judge_labels_plan(*, source: Source, pool: Pool, extend_labels: bool = False) -> JudgeLabelsPlan:
    """Check the whole file against the pool: the plan, or LabelImportError with every problem (`FILE:LINE: ...`).
    A label outside the pool's set is refused unless `extend_labels`: the pool then takes it as a category of its
    own (`new_labels`), written by the import."""
    errors: list[str] = []
    table = table_read(source, errors)
    if table is None:
        raise LabelImportError(errors)
    new_labels = _extension(table, pool) if extend_labels else []
    labels = [*pool.labels, *new_labels]
    if header_problems := _header_problems(table.header, labels):
        raise LabelImportError([f"{table.name}:1: {problem}" for problem in header_problems])
    with_probabilities = any(column.startswith("prob_") for column in table.header)
    items = pool_items_named(pool, {record.get("item", "") for _, record in table.records})
    plan = JudgeLabelsPlan(pool=pool, file=table.name, new_labels=new_labels)
    seen: dict[str, int] = {}
    for line, record in table.records:
        item, label = record.get("item", ""), record.get("label", "")
        problems = []
        if not item:
            problems.append("item: empty")
        elif item not in items:
            problems.append(f"no such item in pool {pool.name!r} (neither its own id nor a public id)")
        elif item in seen:
            problems.append(f"labelled twice (line {seen[item]} too)")
        if label not in labels:
            problems.append(f"label {label!r} is not one of the pool's labels ({', '.join(labels)})")
        probabilities = _probabilities(record, labels, problems) if with_probabilities else {}
        confidence = (
            max(probabilities.values()) if probabilities else _confidence(record.get("confidence", ""), problems)
        )
        errors.extend(f"{table.name}:{line}: item {item!r}: {problem}" for problem in problems)
        seen.setdefault(item, line)
        if not problems:
            plan.rows.append((JudgeLabelRow(line, item, label, probabilities, confidence), items[item][0]))
    if errors:
        raise LabelImportError(errors)
    return plan


def judge_labels_preview(*, source: Source, pool: Pool, extend_labels: bool = False) -> dict:
    """The first rows as they would be read and what the import would do, or the problems. Writes nothing."""
    try:
        plan = judge_labels_plan(source=source, pool=pool, extend_labels=extend_labels)
    except LabelImportError as exc:
        return {"ok": False, "errors": exc.errors, "rows": []}
    return {"ok": True, "errors": [], **plan.summary(), "rows": [row.preview() for row, _ in plan.rows[:PREVIEW_ROWS]]}


def external_model(*, model_id: str, judge: str) -> LanguageModel:
    """The registry's row of an API model (source kind `external`): found by its id, else added. Without an id,
    one row per judge name."""
    source = model_id or f"unnamed model of judge {judge}"
    found = LanguageModel.objects.filter(source_kind=LanguageModel.SourceKind.EXTERNAL, source=source).first()
    if found is not None:
        return found
    base = ("external-" + slugify(model_id or judge))[:64].rstrip("-")
    name, n = base, 1
    while LanguageModel.objects.filter(name=name).exists():
        n += 1
        name = f"{base[: 64 - len(str(n)) - 1]}-{n}"
    return LanguageModel.objects.create(name=name, source_kind=LanguageModel.SourceKind.EXTERNAL, source=source)


def external_judge(
    *, name: str, labels: list[str], model_id: str = "", description: str = "", prompt: str = "", created_by=None
) -> tuple[Judge, bool]:
    """The external judge's version with these settings, (row, created): the latest version when nothing differs,
    else the next. A name that belongs to a judge Concord runs is refused."""
    errors: dict[str, str] = {}
    if not NAME.match(name or ""):
        errors["judge"] = f"must be 1-64 letters, digits, - or _, got {name!r}"
    if model_id and not MODEL_ID.match(model_id):
        errors["model_id"] = f"1-200 characters without spaces, got {model_id!r}"
    latest = judge_latest(name=name) if not errors else None
    if latest is not None and not latest.external:
        errors["judge"] = f"{name!r} is a judge Concord runs; give the external judge a name of its own"
    if errors:
        raise LabelImportError([f"{key}: {value}" for key, value in errors.items()])
    template = prompt if prompt.strip() else NO_PROMPT
    options = [[label, label_display(label)] for label in labels]
    model = external_model(model_id=model_id, judge=name)
    if latest is not None and (latest.model_id, latest.template, latest.options, latest.description) == (
        model.pk, template, options, description,
    ):  # fmt: skip
        return latest, False
    version = (Judge.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1
    try:
        with transaction.atomic():
            judge = Judge.objects.create(
                name=name, version=version, model=model, mode=JudgeMode.IMPORTED, template=template,
                options=options, description=description, created_by=created_by,
            )  # fmt: skip
    except IntegrityError:
        raise LabelImportError([f"judge: {name!r} is being changed by someone else; try again"]) from None
    audit_record(
        event="judge.add", obj=judge, actor=created_by, action=CREATE,
        data={"name": name, "version": version, "model": model.name, "mode": JudgeMode.IMPORTED, "external": True},
    )  # fmt: skip
    return judge, True


def judge_labels_import(
    *,
    source: Source,
    pool_name: str,
    judge: str,
    model_id: str = "",
    description: str = "",
    prompt: str = "",
    created_by=None,
    extend_labels: bool = False,
) -> tuple[JudgeRun, JudgeLabelsPlan]:
    """Import one file of an external judge's labels into an existing pool as one new judge run (origin
    `imported`). Raises LabelImportError (nothing written) for a missing pool, a bad judge or any refused line.

    The same labels imported again for the same judge version (the same file, whatever its name or row order)
    change nothing: the run they made is returned (`plan.unchanged`); a different file is a new run. With
    `extend_labels` the file's labels outside the pool's set become categories of the pool."""
    with transaction.atomic():
        pool = Pool.objects.select_for_update().filter(name=pool_name).first()
        if pool is None:
            raise LabelImportError([f"{source_name(source)}: no pool {pool_name!r}"])
        plan = judge_labels_plan(source=source, pool=pool, extend_labels=extend_labels)
        if plan.new_labels:
            pool.labels = [*pool.labels, *plan.new_labels]
            Pool.objects.filter(pk=pool.pk).update(labels=pool.labels)
            audit_record(
                event="pool.labels", obj=pool, actor=created_by,
                data={"labels": pool.labels, "added_by": "judge import", "file": plan.file},
            )  # fmt: skip
        chosen, _ = external_judge(
            name=judge, labels=list(pool.labels), model_id=model_id, description=description, prompt=prompt,
            created_by=created_by,
        )  # fmt: skip
        digest = plan.digest()
        earlier = (
            JudgeRun.objects.select_related("judge", "job")
            .filter(pool=pool, judge=chosen, origin=RUN_IMPORTED, source_digest=digest)
            .order_by("pk")
            .first()
        )
        if earlier is not None:
            plan.unchanged = True
            return earlier, plan
        run = imported_run_record(
            judge=chosen, pool=pool, count=len(plan.rows), source_file=plan.file, created_by=created_by
        )
        JudgeRun.objects.filter(pk=run.pk).update(source_digest=digest)
        MachineLabel.objects.bulk_create(
            [
                MachineLabel(
                    run=run,
                    item_id=item_id,
                    label=row.label,
                    confidence=row.confidence,
                    scores=dict(row.probabilities),
                    prompt="",
                )  # fmt: skip
                for row, item_id in plan.rows
            ],
            batch_size=BATCH,
        )
        pool_changed(pools=[pool])
        audit_record(
            event="judge.import", obj=run, actor=created_by, action=CREATE,
            data={**plan.summary(), "judge": chosen.name, "version": chosen.version},
        )  # fmt: skip
    return run, plan
