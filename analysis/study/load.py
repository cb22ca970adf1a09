"""Reading a study bundle back: verifying it by recomputing the report in a database of its own, and importing it (in
one transaction: all or nothing) once it verifies (docs/domain.md, 'A study others can check').

The archive is read and checked by `analysis.study.archive` (sizes, members, manifest, ids). The import then checks
every value against its column before writing anything: its type, its length and allowed values, every reference
(to a row of the bundle), every person (a pseudonym), every span, and every key that must be unique. A refusal is a
`BundleError` naming `FILE:LINE: what`; the transaction is rolled back, so nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction
from django.db.models import UniqueConstraint

from accounts.models import Project
from accounts.roles import ANNOTATOR, RESEARCHER
from accounts.services import roles_ensure
from analysis.models import StudyPseudonym
from analysis.report.exports.render import report_json
from analysis.selectors.examples import EXAMPLES_SEED
from analysis.services import report_build_uncached
from analysis.study.archive import (
    MANIFEST_FILE,
    REPORT_FILE,
    Bundle,
    BundleError,
    is_id,
    json_line,
    study_bundle_read,
)
from analysis.study.figures import figures_compare
from analysis.study.isolated import isolated_database
from analysis.study.tables import TABLES, Table, columns, references
from annotation.forms import PoolSampleForm
from annotation.machine import HUMAN
from annotation.models import Annotation, ExtraneousSpan, Pool, PoolItem, Referent, new_public_id
from annotation.services.stamp import pool_changed
from common.audit import CREATE, audit_record
from common.timestamps import RANGE, timestamp_problem
from generation.models import Dataset, LanguageModel
from generation.models.datasets import BASE_CHOICES
from judging.models import Judge

__all__ = ["Bundle", "BundleError", "Imported", "study_bundle_read", "study_import", "study_verify"]

BATCH = 2000
# A pseudonym becomes a username: letters, digits, `.`, `_`, `-`, at most StudyPseudonym's 32 characters.
PSEUDONYM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
SHOWN_DIFFERENCES = 20


def pool_name_checked(name: Any, *, file: str = "", line: int | None = None) -> str:
    """The pool's name, validated as the pool form validates it (a slug of at most 64 characters)."""
    try:
        return str(PoolSampleForm.base_fields["name"].clean(name))
    except ValidationError as exc:
        raise BundleError(f"pool name {name!r}: {' '.join(exc.messages)}", file=file, line=line) from None


@contextmanager
def _stamps_kept() -> Iterator[None]:
    """The bundle's own created_at/updated_at are written as they are, not replaced by now (the first annotator of an
    item is the earliest annotation, so the stamps are data). The fields' flags are the process's: only the
    management commands import, never a web process serving other requests meanwhile."""
    touched = []
    for table in TABLES:
        for column in table.model._meta.concrete_fields:
            if isinstance(column, models.DateTimeField) and (column.auto_now or column.auto_now_add):
                touched.append((column, column.auto_now, column.auto_now_add))
                column.auto_now = column.auto_now_add = False
    try:
        yield
    finally:
        for column, auto_now, auto_now_add in touched:
            column.auto_now, column.auto_now_add = auto_now, auto_now_add


def _type_error(column: models.Field, raw: Any) -> str | None:
    """What is wrong with the JSON value's type for the column, or None."""
    if isinstance(column, models.JSONField):
        return None
    if isinstance(column, models.CharField | models.TextField | models.DateTimeField | models.DateField):
        return None if isinstance(raw, str) else "text"
    if isinstance(column, models.BooleanField):
        return None if isinstance(raw, bool) else "true or false"
    if isinstance(column, models.IntegerField):
        return None if is_id(raw) else "an integer"
    if isinstance(column, models.FloatField):
        return None if isinstance(raw, int | float) and not isinstance(raw, bool) else "a number"
    return None


def _text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(part, str) for part in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# The shape of JSON columns the report reads (for every other one, the type of the column's default is checked).
JSON_SHAPES: dict[tuple[str, str], tuple[str, Callable[[Any], bool]]] = {
    ("pool", "labels"): ("a list of labels", _text_list),
    ("generationrun", "pronouns"): ("a list of pronouns", _text_list),
    ("generationrun", "settings"): ("a list of settings", _text_list),
    ("judge", "options"): (
        "a list of [label, option text] pairs",
        lambda value: isinstance(value, list) and all(_text_list(pair) and len(pair) == 2 for pair in value),
    ),
    ("machinelabel", "scores"): (
        "an object of label -> number",
        lambda value: isinstance(value, dict) and all(v is None or _number(v) for v in value.values()),
    ),
    ("adjudication", "spans"): (
        "a list of [start, end]",
        lambda value: isinstance(value, list) and all(isinstance(part, list) and len(part) == 2 for part in value),
    ),
    ("adjudication", "referents"): ("a list of [start, end, referent]", lambda value: isinstance(value, list)),
}


def _json_error(column: models.Field, raw: Any) -> str | None:
    """What is wrong with a JSON column's value's shape, or None."""
    shape = JSON_SHAPES.get((column.model._meta.model_name or "", column.name))
    if shape is not None:
        return None if shape[1](raw) else shape[0]
    default = column.get_default()
    if isinstance(default, list | dict) and not isinstance(raw, type(default)):
        return "a list" if isinstance(default, list) else "an object"
    return None


# The spelling of a pronoun family's base, as a templates codebook may name it (generation/datasets/templates_files.py).
FAMILY = re.compile(r"^[a-z]{1,8}$")


def _is_family(column: models.Field) -> bool:
    """A column that holds a pronoun family's base (its choices are the built-in families)."""
    return bool(column.choices) and list(column.choices or ()) == list(BASE_CHOICES)


def checked_value(column: models.Field, raw: Any, *, file: str, line: int) -> Any:
    """The column's value from the bundle's JSON value: the right type, within the column's length, range and
    choices; BundleError otherwise."""
    if raw is None:
        if not column.null:
            raise BundleError(f"{column.attname} may not be null", file=file, line=line)
        return None
    expected = _json_error(column, raw) if isinstance(column, models.JSONField) else _type_error(column, raw)
    if expected is not None:
        raise BundleError(f"{column.attname} must be {expected}, not {raw!r:.80}", file=file, line=line)
    try:
        value = raw if isinstance(column, models.JSONField) else column.to_python(raw)
        if value is None and not column.null:
            raise ValidationError("not a valid value")
        column.run_validators(value)
        if isinstance(value, datetime) and (problem := timestamp_problem(value)):
            raise ValidationError(problem)
        if _is_family(column):
            # A pronoun family: the built-in four are only the choices the admin offers; a templates or free-text
            # dataset brings its own (docs/domain.md, "Your own templates"), and a free-text item may state none.
            if not (value == "" and column.blank) and not FAMILY.match(str(value)):
                raise ValidationError("not a pronoun family (1 to 8 lowercase letters)")
        elif column.choices and not isinstance(column, models.JSONField):
            allowed = [str(choice) for choice, _ in column.flatchoices]
            if str(value) not in allowed:
                raise ValidationError(f"not one of {', '.join(allowed)}")
    except ValidationError as exc:
        raise BundleError(f"bad {column.attname} {raw!r:.80}: {' '.join(exc.messages)}", file=file, line=line) from None
    except OverflowError:  # a time past what Python holds (year 0 or 10000 once in UTC)
        raise BundleError(f"bad {column.attname} {raw!r:.80}: must be {RANGE}", file=file, line=line) from None
    return value


def _unique_sets(model: type[models.Model]) -> list[tuple[tuple[str, ...], bool]]:
    """Each set of columns that must be unique (attribute names), and whether it applies only under a condition
    (then a key with an empty part is not checked)."""
    meta = model._meta
    attname = {column.name: column.attname for column in meta.concrete_fields}
    sets: list[tuple[tuple[str, ...], bool]] = [
        ((column.attname,), False) for column in meta.concrete_fields if column.unique and not column.primary_key
    ]
    for together in meta.unique_together:
        sets.append((tuple(attname[name] for name in together), False))
    for constraint in meta.constraints:
        if isinstance(constraint, UniqueConstraint) and constraint.fields:
            sets.append((tuple(attname[name] for name in constraint.fields), constraint.condition is not None))
    return sets


def _keys_checked(obj: models.Model, unique: list, seen: dict[tuple, int], *, file: str, line: int) -> None:
    """Refuse a row whose unique key (an item's annotator, a run's item, ...) an earlier row of the file has."""
    for names, conditional in unique:
        key = tuple(getattr(obj, name) for name in names)
        if any(part is None or (conditional and part == "") for part in key):
            continue
        first = seen.setdefault((names, key), line)
        if first != line:
            shown = ", ".join(f"{name} {part!r:.40}" for name, part in zip(names, key, strict=True))
            raise BundleError(f"{shown} appears again (first on line {first})", file=file, line=line)


@dataclass
class Imported:
    pool: Pool
    rows: dict[str, int]
    ids: dict[str, dict[int, int]] = field(default_factory=dict)


# What a version-1 bundle kept in a generation job's row (version 2: generation_runs.jsonl), and in its options.
V1_JOB_PARAMETERS = ("dataset_id", "pronouns", "settings", "samples", "max_new_tokens", "top_k", "top_p", "num_beams",
                     "seed", "per_pronoun", "prob_score")  # fmt: skip
V1_JOB_OPTIONS = ("engine", "distractors", "sample_seed")


def _version_1_upgraded(bundle: Bundle) -> None:
    """A version-1 bundle's rows as today's tables hold them: each generation job's parameters (its row's columns
    and options) become a row of generation_runs (on the job's line, under the job's id), and each judge run takes
    its mode, k, temperature and seed from its job's options and seed. Every value is then checked as any row's."""
    version = bundle.manifest.get("format_version")
    if not isinstance(version, int) or version >= 2 or bundle.has_rows("generation_runs"):
        return
    jobs = bundle.numbered_rows("jobs")
    by_id = {row["id"]: row for _, row in jobs}
    runs = []
    for line, row in jobs:
        options: dict = row["options"] if isinstance(row.get("options"), dict) else {}
        if row.get("kind", "generation") != "generation":
            continue
        run = {"id": row["id"], "job_id": row["id"], **{name: row[name] for name in V1_JOB_PARAMETERS if name in row}}
        run.update({name: options[name] for name in V1_JOB_OPTIONS if options.get(name) is not None})
        runs.append((line, run))
        row["options"] = {key: value for key, value in options.items() if key not in V1_JOB_OPTIONS}
    bundle.rows_derive("generation_runs", runs)
    for _, row in bundle.numbered_rows("judge_runs"):
        job = by_id.get(row.get("job_id"))
        if job is None or "mode" in row:
            continue
        options = job["options"] if isinstance(job.get("options"), dict) else {}
        row["mode"] = options.get("mode") or ("imported" if row.get("origin") == "imported" else "likelihood")
        row["k"], row["temperature"] = options.get("k", 1), options.get("temperature", 1.0)
        row["seed"] = job.get("seed", 0)
        job["options"] = {}


class _Importer:
    def __init__(self, bundle: Bundle, pool_name: str, project: Project | None = None):
        _version_1_upgraded(bundle)
        self.bundle = bundle
        self.pool_name = pool_name
        self.project = project
        self.ids: dict[str, dict[int, int]] = {}
        self.people: dict[str, int] = {}
        self.suffix = f"-{pool_name}"
        self.pool_jobs: list[int] = []
        self.text_lengths: dict[int, int] = {}  # item id (new) -> its continuation's length

    def person(self, pseudonym: Any, *, role: str, column: str, file: str, line: int) -> int | None:
        if pseudonym is None:
            return None
        if not isinstance(pseudonym, str) or not PSEUDONYM.fullmatch(pseudonym):
            raise BundleError(
                f"{column} must be a pseudonym (letters, digits, '.', '_', '-'; at most 32), not {pseudonym!r:.80}",
                file=file,
                line=line,
            )
        if pseudonym not in self.people:
            users = get_user_model()
            name, attempt = pseudonym, 1
            while users.objects.filter(username=name).exists():  # someone here is already named so
                attempt += 1
                name = f"{pseudonym}{self.suffix}" + (f"-{attempt}" if attempt > 2 else "")
                name = name[:150]
            user = users.objects.create(username=name)
            user.set_unusable_password()
            user.save(update_fields=["password"])
            user.groups.add(Group.objects.get(name=role))
            self.people[pseudonym] = user.pk
        return self.people[pseudonym]

    def reference(self, attname: str, raw: Any, target: str, *, file: str, line: int) -> int:
        if not is_id(raw) or raw not in self.ids.get(target, {}):
            raise BundleError(f"{attname} {raw!r:.80} names no row of {target}.jsonl", file=file, line=line)
        return self.ids[target][raw]

    def build(self, table: Table, line: int, row: dict, kept: list[models.Field], refs: dict[str, str]) -> models.Model:
        file = f"{table.name}.jsonl"
        values = {}
        for column in kept:
            if column.attname in table.people:
                name = table.people[column.attname]
                role = ANNOTATOR if name == "annotator" else RESEARCHER
                values[column.attname] = self.person(row.get(name), role=role, column=name, file=file, line=line)
            elif column.name == "origin" and row.get("origin") == HUMAN and "rater" not in row:
                continue  # a bundle from before labels had an origin: its `origin` said the kind of rater
            elif column.attname not in row:
                continue
            elif row[column.attname] is not None and column.attname in refs:
                values[column.attname] = self.reference(
                    column.attname, row[column.attname], refs[column.attname], file=file, line=line
                )
            else:
                values[column.attname] = checked_value(column, row[column.attname], file=file, line=line)
        return table.model(**values)

    def natural(self, obj: models.Model) -> models.Model | None:
        """An existing row to use instead (a registered model of the same name), or None; renames what would
        clash with an existing row (a dataset, a judge version)."""
        if isinstance(obj, LanguageModel):
            return LanguageModel.objects.filter(name=obj.name).first()
        if isinstance(obj, Dataset) and Dataset.objects.filter(name=obj.name).exists():
            obj.name = f"{obj.name}{self.suffix}"[:64]
        if isinstance(obj, Judge):
            same = Judge.objects.filter(name=obj.name, version=obj.version).first()
            if same is not None and (same.template, same.options, same.mode) == (obj.template, obj.options, obj.mode):
                return same
            if same is not None:
                obj.name = f"{obj.name}{self.suffix}"[:64]
        if isinstance(obj, Pool):
            obj.name = self.pool_name
            if self.project is not None:
                obj.project = self.project
        return None

    def table(self, table: Table) -> int:
        file = f"{table.name}.jsonl"
        rows = self.bundle.numbered_rows(table.name)
        mapping: dict[int, int] = {}
        pending: list[tuple[int, int, models.Model]] = []  # (line, bundle id, row to write)
        kept, refs = columns(table, private=True), references(table)
        unique = _unique_sets(table.model)
        seen: dict[tuple, int] = {}
        if table.model is Pool and len(rows) != 1:
            raise BundleError(f"holds {len(rows)} pools, not one", file=file, line=rows[1][0] if rows else None)
        for line, row in rows:
            obj = self.build(table, line, row, kept, refs)
            existing = self.natural(obj)
            _keys_checked(obj, unique, seen, file=file, line=line)
            if existing is not None:
                mapping[row["id"]] = existing.pk
            else:
                pending.append((line, row["id"], obj))
        if table.model is PoolItem:
            self._item_ids([obj for _, _, obj in pending])
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            created = self._insert(table, batch)
            mapping.update({old: obj.pk for (_, old, _), obj in zip(batch, created, strict=True)})
        self.ids[table.name] = mapping
        if table.model is Pool:
            self._pool_jobs(rows[0])
        written = [obj for _, _, obj in pending]
        if table.model is PoolItem:
            self.text_lengths = {obj.pk: len(obj.continuation) for obj in written if isinstance(obj, PoolItem)}
        if table.model is Annotation:
            self._annotation_parts(file, rows, mapping)
        return len(rows)

    @staticmethod
    def _insert(table: Table, batch: list[tuple[int, int, models.Model]]) -> list[models.Model]:
        """Write the batch; when the database refuses it (a key taken by a row already here), find the row it
        refuses and name its line."""
        manager = table.model._default_manager
        try:
            with transaction.atomic():
                return manager.bulk_create([obj for _, _, obj in batch])
        except DatabaseError:
            pass
        for line, _, obj in batch:
            try:
                with transaction.atomic():
                    manager.bulk_create([obj])
            except DatabaseError as exc:
                what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise BundleError(
                    f"the database refuses the row: {what}", file=f"{table.name}.jsonl", line=line
                ) from None
        raise BundleError("the database refuses these rows together", file=f"{table.name}.jsonl", line=batch[0][0])

    def _pool_jobs(self, numbered: tuple[int, dict]) -> None:
        line, row = numbered
        jobs = row.get("jobs", [])
        if not isinstance(jobs, list) or not all(is_id(job) for job in jobs):
            raise BundleError("jobs must be a list of job ids", file="pools.jsonl", line=line)
        self.pool_jobs = jobs

    @staticmethod
    def _item_ids(items: list) -> None:
        """Keep the items' public ids unless one is taken here (the same bundle imported twice): then new ones."""
        ids = [item.public_id for item in items]
        if PoolItem.objects.filter(public_id__in=ids).exists():
            for item in items:
                item.public_id = new_public_id()

    def _span(self, part: Any, length: int | None, size: int, *, what: str, file: str, line: int) -> list:
        if not isinstance(part, list) or len(part) != size or not all(is_id(offset) for offset in part[:2]):
            raise BundleError(f"each of {what} must be [start, end{', ...' if size > 2 else ''}]", file=file, line=line)
        start, end = part[0], part[1]
        if not 0 <= start < end or (length is not None and end > length):
            raise BundleError(
                f"{what} [{start}, {end}] is outside the generated text (0 to {length} characters)",
                file=file,
                line=line,
            )
        return part

    def _annotation_parts(self, file: str, rows: list[tuple[int, dict]], mapping: dict[int, int]) -> None:
        items = dict(Annotation.objects.filter(pk__in=mapping.values()).values_list("pk", "item_id"))
        spans, referents = [], []
        word_column = Referent._meta.get_field("word")
        referent_column = Referent._meta.get_field("referent")
        for line, row in rows:
            annotation_id = mapping[row["id"]]
            length = self.text_lengths.get(items.get(annotation_id, -1))
            for name in ("spans", "referents"):
                if not isinstance(row.get(name) or [], list):
                    raise BundleError(f"{name} must be a list", file=file, line=line)
            starts: set = set()
            for part in row.get("spans") or []:
                start, end = self._span(part, length, 2, what="spans", file=file, line=line)
                if (start, end) in starts:
                    raise BundleError(f"span [{start}, {end}] appears twice", file=file, line=line)
                starts.add((start, end))
                spans.append(ExtraneousSpan(annotation_id=annotation_id, start=start, end=end))
            starts = set()
            for part in row.get("referents") or []:
                start, end, word, referent = self._span(part, length, 4, what="referents", file=file, line=line)
                if start in starts:
                    raise BundleError(f"two referents start at {start}", file=file, line=line)
                starts.add(start)
                word = checked_value(word_column, word, file=file, line=line)
                referent = checked_value(referent_column, referent, file=file, line=line)
                referents.append(
                    Referent(annotation_id=annotation_id, start=start, end=end, word=word, referent=referent)
                )
        ExtraneousSpan.objects.bulk_create(spans, batch_size=BATCH)
        Referent.objects.bulk_create(referents, batch_size=BATCH)

    def run(self) -> Imported:
        if Pool.objects.filter(name=self.pool_name).exists():
            raise BundleError(f"a pool named {self.pool_name!r} already exists here: choose another name with --pool")
        roles_ensure()
        counts = {}
        with _stamps_kept():
            for table in TABLES:
                counts[table.name] = self.table(table)
        pool = Pool.objects.get(pk=next(iter(self.ids["pools"].values())))
        line = self.bundle.numbered_rows("pools")[0][0]
        pool.jobs.set(
            [
                self.reference("jobs", old, "jobs", file="pools.jsonl", line=line)
                for old in dict.fromkeys(self.pool_jobs)
            ]
        )
        if pool.active_run_id is not None:  # an active pool names the judge run that drew it by its id
            pool.active_run_id = self.reference(
                "active_run_id", pool.active_run_id, "judge_runs", file="pools.jsonl", line=line
            )
            pool.save(update_fields=["active_run_id"])
        StudyPseudonym.objects.bulk_create(
            StudyPseudonym(pool=pool, user_id=uid, pseudonym=name) for name, uid in self.people.items()
        )
        pool_changed(pools=[pool])
        return Imported(pool=pool, rows=counts, ids=self.ids)


def _bundle_pool_name(bundle: Bundle) -> str:
    name = bundle.pool_name()
    line = json_line(bundle.manifest_text, "name")
    if name is None:
        raise BundleError("the manifest names no pool; give one with --pool", file=MANIFEST_FILE, line=line)
    return pool_name_checked(name, file=MANIFEST_FILE, line=line)


def _report_parameters(bundle: Bundle, bundled: dict) -> dict:
    """The parameters the bundled report was built with (its examples' seed, the human verdict's rule)."""
    seed = bundled.get("examples_seed", EXAMPLES_SEED)
    verdict = bundled.get("human_verdict")
    text = bundle.files[REPORT_FILE].decode("utf-8", "replace")
    if not is_id(seed):
        raise BundleError(
            f"examples_seed must be an integer, not {seed!r:.80}",
            file=REPORT_FILE,
            line=json_line(text, "examples_seed"),
        )
    if verdict is not None and not isinstance(verdict, str):
        raise BundleError(
            f"human_verdict must be text, not {verdict!r:.80}", file=REPORT_FILE, line=json_line(text, "human_verdict")
        )
    return {"examples_seed": seed, "human_verdict": None if verdict in (None, "default") else verdict}


def _recomputed(pool: Pool, parameters: dict) -> dict:
    return json.loads(report_json(report=report_build_uncached(pool=pool, **parameters)))


def bundle_verify(bundle: Bundle) -> dict:
    """Import the bundle into a database of its own (analysis/study/isolated.py), recompute its report and compare
    every figure with the bundled one (analysis/study/figures.py). Returns {"figures", "equal", "differ",
    "changed_files"}. The database Concord runs on is never read or written."""
    try:
        bundled = bundle.report()
        parameters = _report_parameters(bundle, bundled)
        name = _bundle_pool_name(bundle)
        with isolated_database(), transaction.atomic():
            imported = _Importer(bundle, name).run()
            try:
                recomputed = _recomputed(imported.pool, parameters)
            except Exception as exc:  # noqa: BLE001 - data every column took that the report still cannot read
                raise BundleError(
                    f"the report cannot be rebuilt from the bundle's data: {type(exc).__name__}: {exc}",
                    file=REPORT_FILE,
                ) from None
    except BundleError as exc:
        if not bundle.changed_files:
            raise
        changed = ", ".join(bundle.changed_files)
        raise BundleError(
            f"{exc.what} ({changed} differ from the manifest's SHA-256: changed after export)",
            file=exc.file,
            line=exc.line,
        ) from None
    outcome = figures_compare(bundled=bundled, recomputed=recomputed)
    return {**outcome, "changed_files": bundle.changed_files}


def study_verify(*, source: str | Path | IO[bytes]) -> dict:
    """Read the bundle (BundleError when it cannot be read) and verify it: `bundle_verify`."""
    return bundle_verify(study_bundle_read(source))


def differences_text(outcome: dict) -> str:
    """`N of M figures differ from the bundle: figure: bundled X, recomputed Y; ...` (the first 20)."""
    differ = outcome["differ"]
    shown = "; ".join(
        f"{row['figure']}: bundled {row['bundled']}, recomputed {row['recomputed']}"
        for row in differ[:SHOWN_DIFFERENCES]
    )
    more = len(differ) - SHOWN_DIFFERENCES
    return f"{len(differ)} of {outcome['figures']} figures differ from the bundle: {shown}" + (
        f"; and {more} more" if more > 0 else ""
    )


def study_import(
    *, bundle: Bundle, pool_name: str | None = None, user=None, accept_differences: bool = False,
    project: Project | None = None,
) -> Imported:  # fmt: skip
    """Import the bundle as a new pool (named `pool_name`, or as in the bundle) in one transaction: all of it or
    nothing. The bundle is verified first (`bundle_verify`): one whose report does not follow from its data is
    refused, naming the figures that differ, unless `accept_differences`. People come in as users named by their
    pseudonyms, without a password (an admin sets one to let them work on). Raises BundleError, and then nothing is
    written. The new pool belongs to `project` (None: the default project)."""
    if bundle.changed_files:
        raise BundleError(
            "differs from the manifest's SHA-256: the bundle was changed after export", file=bundle.changed_files[0]
        )
    name = pool_name_checked(pool_name, file="--pool") if pool_name is not None else _bundle_pool_name(bundle)
    outcome = bundle_verify(bundle)
    if outcome["differ"] and not accept_differences:
        raise BundleError(f"{differences_text(outcome)} (import it anyway with --accept-differences)", file=REPORT_FILE)
    with transaction.atomic():
        imported = _Importer(bundle, name, project).run()
        audit_record(
            event="study.import",
            obj=imported.pool,
            actor=user,
            action=CREATE,
            data={
                "rows": imported.rows,
                "commit": bundle.manifest.get("concord", {}).get("commit")
                if isinstance(bundle.manifest.get("concord"), dict)
                else None,
                "figures_differ": len(outcome["differ"]),
            },
        )
    return imported
