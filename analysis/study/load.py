"""Reading a study bundle back: checking it, importing it (in one transaction: all or nothing), and verifying it
by recomputing the report (docs/domain.md, 'A study others can check').

`study_bundle_read` rejects, before anything is written, an archive that is not a zip or is truncated, one from a
newer format, one whose manifest is missing or malformed, and one without a file its manifest lists. A file whose
SHA-256 differs from the manifest's is reported (`changed_files`): verification goes on and names the figures that
moved, an import refuses it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import models, transaction

from accounts.roles import ANNOTATOR, RESEARCHER
from accounts.services import roles_ensure
from analysis.models import StudyPseudonym
from analysis.report.exports.render import report_json
from analysis.services import report_build_uncached
from analysis.study.export import MANIFEST_FILE, REPORT_FILE
from analysis.study.figures import figures_compare
from analysis.study.tables import FORMAT, FORMAT_VERSION, OPTION_REFERENCES, TABLES, Table, columns, references
from annotation.models import Annotation, ExtraneousSpan, Pool, PoolItem, Referent, new_public_id
from common.audit import CREATE, audit_record
from generation.models import Dataset, GenerationJob, LanguageModel
from judging.models import Judge

BATCH = 2000


class BundleError(ValueError):
    """The archive is not a bundle this Concord can read; nothing was written."""


@dataclass
class Bundle:
    manifest: dict
    files: dict[str, bytes]
    changed_files: list[str] = field(default_factory=list)

    def rows(self, table: str) -> list[dict]:
        data = self.files.get(f"{table}.jsonl", b"")
        try:
            return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{table}.jsonl is malformed: {exc}") from None

    def report(self) -> dict:
        try:
            return json.loads(self.files[REPORT_FILE])
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{REPORT_FILE} is malformed: {exc}") from None


def study_bundle_read(source: str | Path | IO[bytes]) -> Bundle:
    """The bundle's manifest and files, checked; BundleError says what is wrong."""
    try:
        archive = zipfile.ZipFile(source)
    except FileNotFoundError:
        raise BundleError(f"no such file: {source}") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise BundleError(f"not a study bundle (not a readable zip archive, perhaps truncated): {exc}") from None
    with archive:
        names = set(archive.namelist())
        if MANIFEST_FILE not in names:
            raise BundleError(f"not a study bundle: {MANIFEST_FILE} is missing")
        manifest = _manifest(_read(archive, MANIFEST_FILE))
        listed = manifest["files"]
        missing = sorted(name for name in listed if name not in names)
        if missing:
            raise BundleError(f"the bundle is incomplete: {', '.join(missing)} missing (listed in {MANIFEST_FILE})")
        files = {name: _read(archive, name) for name in listed}
    changed = sorted(name for name, data in files.items() if hashlib.sha256(data).hexdigest() != listed[name]["sha256"])
    return Bundle(manifest=manifest, files=files, changed_files=changed)


def _read(archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as exc:  # a bad CRC, a cut member
        raise BundleError(f"{name} cannot be read (the archive is damaged or truncated): {exc}") from None


def _manifest(data: bytes) -> dict:
    try:
        manifest = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{MANIFEST_FILE} is malformed: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{MANIFEST_FILE} is not a Concord study manifest (format {FORMAT!r})")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise BundleError(f"{MANIFEST_FILE} has no valid format_version")
    if version > FORMAT_VERSION:
        raise BundleError(
            f"the bundle's format version {version} is newer than this Concord reads ({FORMAT_VERSION}): upgrade Concord"
        )
    files = manifest.get("files")
    required = {f"{table.name}.jsonl" for table in TABLES} | {REPORT_FILE}
    if not isinstance(files, dict) or not required <= set(files):
        absent = sorted(required - set(files or {})) if isinstance(files, dict) else ["files"]
        raise BundleError(f"{MANIFEST_FILE} does not list {', '.join(absent)}")
    if not all(isinstance(entry, dict) and isinstance(entry.get("sha256"), str) for entry in files.values()):
        raise BundleError(f"{MANIFEST_FILE} lists a file without its sha256")
    return manifest


# --- the import --------------------------------------------------------------------------------------------------


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


@dataclass
class Imported:
    pool: Pool
    rows: dict[str, int]
    ids: dict[str, dict[int, int]] = field(default_factory=dict)


class _Importer:
    def __init__(self, bundle: Bundle, pool_name: str):
        self.bundle = bundle
        self.pool_name = pool_name
        self.ids: dict[str, dict[int, int]] = {}
        self.people: dict[str, int] = {}
        self.suffix = f"-{pool_name}"
        self._pool_jobs_later: list[int] = []

    def person(self, pseudonym: str | None, *, role: str) -> int | None:
        if pseudonym is None:
            return None
        if pseudonym not in self.people:
            users = get_user_model()
            name = pseudonym
            if users.objects.filter(username=name).exists():
                name = f"{pseudonym}{self.suffix}"[:150]
            user = users.objects.create(username=name)
            user.set_unusable_password()
            user.save(update_fields=["password"])
            user.groups.add(Group.objects.get(name=role))
            self.people[pseudonym] = user.pk
        return self.people[pseudonym]

    def value(self, column: models.Field, raw: Any, table: Table, refs: dict[str, str]) -> Any:
        if raw is None:
            return None
        if column.attname in refs:
            target = refs[column.attname]
            try:
                return self.ids[target][raw]
            except KeyError:
                raise BundleError(f"{table.name}: {column.attname} {raw} names no row of {target}") from None
        if isinstance(column, models.JSONField):
            return raw
        try:
            return column.to_python(raw)
        except Exception as exc:  # noqa: BLE001 - any field's refusal is the bundle's fault
            raise BundleError(f"{table.name}: bad {column.attname} {raw!r}: {exc}") from None

    def build(self, table: Table, row: dict, kept: list[models.Field], refs: dict[str, str]) -> models.Model:
        values = {}
        for column in kept:
            if column.attname in table.people:
                pseudonym = row.get(table.people[column.attname])
                role = ANNOTATOR if table.people[column.attname] == "annotator" else RESEARCHER
                values[column.attname] = self.person(pseudonym, role=role)
            elif column.attname in row:
                values[column.attname] = self.value(column, row[column.attname], table, refs)
        return table.model(**values)

    def natural(self, table: Table, obj: models.Model, row: dict) -> models.Model | None:
        """An existing row to use instead (a registered model of the same name), or None; renames what would
        clash with an existing row (a dataset, a judge version, an item id)."""
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
        if isinstance(obj, GenerationJob):
            obj.options = {
                key: self.ids[OPTION_REFERENCES[key]].get(value, value) if key in OPTION_REFERENCES else value
                for key, value in (obj.options or {}).items()
            }
        return None

    def table(self, table: Table) -> int:
        rows = self.bundle.rows(table.name)
        mapping: dict[int, int] = {}
        pending: list[tuple[int, models.Model]] = []
        kept, refs = columns(table), references(table)
        for row in rows:
            if not isinstance(row, dict) or "id" not in row:
                raise BundleError(f"{table.name}.jsonl has a row without an id")
            obj = self.build(table, row, kept, refs)
            existing = self.natural(table, obj, row)
            if existing is not None:
                mapping[row["id"]] = existing.pk
            else:
                pending.append((row["id"], obj))
        if table.model is PoolItem:
            self._item_ids([obj for _, obj in pending])
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            created = table.model._default_manager.bulk_create([obj for _, obj in batch])
            mapping.update({old: obj.pk for (old, _), obj in zip(batch, created, strict=True)})
        self.ids[table.name] = mapping
        if table.model is Pool:
            self._pool_jobs_later = rows[0].get("jobs", []) if rows else []
        if table.model is Annotation:
            self._annotation_parts(rows, mapping)
        return len(rows)

    @staticmethod
    def _item_ids(items: list) -> None:
        """Keep the items' public ids unless one is taken here (the same bundle imported twice): then new ones."""
        ids = [item.public_id for item in items]
        if PoolItem.objects.filter(public_id__in=ids).exists():
            for item in items:
                item.public_id = new_public_id()

    def _annotation_parts(self, rows: list[dict], mapping: dict[int, int]) -> None:
        spans = [
            ExtraneousSpan(annotation_id=mapping[row["id"]], start=start, end=end)
            for row in rows
            for start, end in row.get("spans") or []
        ]
        referents = [
            Referent(annotation_id=mapping[row["id"]], start=start, end=end, word=word, referent=referent)
            for row in rows
            for start, end, word, referent in row.get("referents") or []
        ]
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
        if not self.ids.get("pools"):
            raise BundleError("pools.jsonl holds no pool")
        pool = Pool.objects.get(pk=next(iter(self.ids["pools"].values())))
        pool.jobs.set([self.ids["jobs"][old] for old in self._pool_jobs_later])
        StudyPseudonym.objects.bulk_create(
            StudyPseudonym(pool=pool, user_id=uid, pseudonym=name) for name, uid in self.people.items()
        )
        return Imported(pool=pool, rows=counts, ids=self.ids)


def study_import(*, bundle: Bundle, pool_name: str | None = None, user=None) -> Imported:
    """Import the bundle as a new pool (named `pool_name`, or as in the bundle) in one transaction: all of it or
    nothing. People come in as users named by their pseudonyms, without a password (an admin sets one to let them
    work on). Raises BundleError, and then nothing is written."""
    if bundle.changed_files:
        raise BundleError(
            f"{', '.join(bundle.changed_files)} differ from the manifest's SHA-256: the bundle was changed after export"
        )
    name = pool_name or bundle.manifest.get("pool", {}).get("name")
    if not name:
        raise BundleError("the manifest names no pool; give one with --pool")
    with transaction.atomic():
        imported = _Importer(bundle, name).run()
        audit_record(
            event="study.import",
            obj=imported.pool,
            actor=user,
            action=CREATE,
            data={"rows": imported.rows, "commit": bundle.manifest.get("concord", {}).get("commit")},
        )
    return imported


def _recomputed(pool: Pool, bundled: dict) -> dict:
    report = report_build_uncached(
        pool=pool,
        examples_seed=bundled.get("examples_seed", 131719),
        human_verdict=None if bundled.get("human_verdict") in (None, "default") else bundled["human_verdict"],
    )
    return json.loads(report_json(report=report))


def study_verify(*, source: str | Path | IO[bytes]) -> dict:
    """Import the bundle, recompute its report, compare every figure with the bundled one (analysis/study/figures.py)
    and roll the import back. Returns {"figures", "equal", "differ", "changed_files"}; BundleError when the bundle
    cannot be read."""
    bundle = study_bundle_read(source)
    bundled = bundle.report()
    with transaction.atomic():
        imported = _Importer(bundle, _free_name(bundle.manifest.get("pool", {}).get("name") or "verified")).run()
        outcome = figures_compare(bundled=bundled, recomputed=_recomputed(imported.pool, bundled))
        transaction.set_rollback(True)
    return {**outcome, "changed_files": bundle.changed_files}


def _free_name(name: str) -> str:
    """The bundle's pool name, unless this database has a pool by that name (verification is then done beside it)."""
    if not Pool.objects.filter(name=name).exists():
        return name
    return f"{name}-verify"[:64]
