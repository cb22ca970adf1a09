"""Writing a pool's study bundle (docs/domain.md, 'A study others can check'): one zip archive with `manifest.json`,
a JSON-lines file per table of `analysis.study.tables.TABLES` and `report.json`.

People appear only as stable pseudonyms (`annotator-01`, ...; `StudyPseudonym` keeps the key): no username, email,
password or token is written. The report is the pool's, with every username replaced by its pseudonym; pseudonyms
are numbered in the order of the usernames, so the report's rows keep their order under the new names.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from analysis.models import StudyPseudonym
from analysis.report.exports.render import report_json
from analysis.services import report_build
from analysis.study.archive import MANIFEST_FILE, REPORT_FILE
from analysis.study.figures import figures_compare
from analysis.study.provenance import dataset_provenance, file_name, model_provenance
from analysis.study.tables import FORMAT, FORMAT_VERSION, TABLES, Scope, Table, columns, judge_runs
from annotation.machine import HUMAN
from annotation.models import Adjudication, Annotation, Assignment, ExtraneousSpan, Pool, Referent
from common.audit import audit_record
from common.version import VERSION, concord_commit
from generation.jobs.kinds import job_kind_handler
from generation.models import Dataset, Job, LanguageModel
from judging.models import Judge, MachineLabel

NOTES_WARNING = (
    "this bundle holds the annotators' and adjudicators' notes word for word: they may name people or say more than "
    "the study needs; read them before sharing the bundle"
)


def _width(count: int) -> int:
    return max(2, len(str(count)))


@transaction.atomic
def study_pseudonyms(*, pool: Pool) -> dict[int, str]:
    """user id -> pseudonym for everyone who annotated, was assigned or adjudicated in the pool. Pseudonyms once
    given are kept; newcomers get the next numbers, in the order of their usernames. Annotators are
    `annotator-NN`; someone who only adjudicated is `adjudicator-NN`."""
    Pool.objects.select_for_update().get(pk=pool.pk)
    known = dict(StudyPseudonym.objects.filter(pool=pool).values_list("user_id", "pseudonym"))
    annotator_ids = {
        *Annotation.objects.filter(item__pool=pool).values_list("annotator_id", flat=True),
        *Assignment.objects.filter(pool=pool).values_list("annotator_id", flat=True),
    }
    adjudicator_ids = set(
        Adjudication.objects.filter(item__pool=pool, adjudicator__isnull=False).values_list("adjudicator_id", flat=True)
    )
    users = get_user_model().objects.in_bulk([*annotator_ids, *adjudicator_ids])
    for prefix, ids in (("annotator", annotator_ids), ("adjudicator", adjudicator_ids - annotator_ids)):
        new = sorted((uid for uid in ids if uid not in known), key=lambda uid: users[uid].get_username())
        taken = sum(1 for name in known.values() if name.startswith(f"{prefix}-"))
        width = _width(taken + len(new))
        for offset, uid in enumerate(new, start=taken + 1):
            name = f"{prefix}-{offset:0{width}d}"
            StudyPseudonym.objects.create(pool=pool, user_id=uid, pseudonym=name)
            known[uid] = name
    return known


def _pseudonymised(value: Any, names: dict[str, str]) -> Any:
    """The report with every username (as a whole string or a key) replaced by its pseudonym."""
    if isinstance(value, dict):
        return {names.get(k, k) if isinstance(k, str) else k: _pseudonymised(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_pseudonymised(v, names) for v in value]
    if isinstance(value, str):
        return names.get(value, value)
    return value


def _table_rows(table: Table, scope: Scope, pseudonyms: dict[int, str], *, notes: bool) -> list[dict]:
    kept = columns(table, private=notes)
    rows = list(table.rows(scope).order_by("pk").values("id", *(c.attname for c in kept)))
    for attname, column in table.people.items():
        for row in rows:
            row[column] = pseudonyms.get(row.pop(attname)) if row.get(attname) is not None else None
    _paths_reduced(table, rows)
    if table.model is Pool:
        for row in rows:
            row["jobs"] = sorted(scope.pool.jobs.values_list("pk", flat=True))
    if table.model is Annotation:
        _annotation_parts(rows, scope, origin_column="origin" in row_columns(table))
    if table.model is MachineLabel:
        origins = {run.pk: run.judge.origin for run in judge_runs(scope.pool).select_related("judge")}
        for row in rows:
            row["rater"] = origins[row["run_id"]]
            row.setdefault("origin", origins[row["run_id"]])
    return rows


def _paths_reduced(table: Table, rows: list[dict]) -> None:
    """Paths on the server become file names: the table's path columns, and a local model's folder."""
    for row in rows:
        for name in table.paths:
            if isinstance(row.get(name), str):
                row[name] = file_name(row[name])
        if table.model is LanguageModel and row["source_kind"] == LanguageModel.SourceKind.PATH:
            row["source"] = file_name(row["source"])


def _annotation_parts(rows: list[dict], scope: Scope, *, origin_column: bool) -> None:
    """Each annotation row with its spans and referents, and the kind of rater it came from (`rater`: human). A
    label's own `origin` column (made here or imported) is data and travels as it is."""
    spans: dict[int, list] = {}
    for annotation_id, start, end in (
        ExtraneousSpan.objects.filter(annotation__item__pool=scope.pool)
        .order_by("annotation_id", "start", "end")
        .values_list("annotation_id", "start", "end")
    ):
        spans.setdefault(annotation_id, []).append([start, end])
    referents: dict[int, list] = {}
    for annotation_id, start, end, word, referent in (
        Referent.objects.filter(annotation__item__pool=scope.pool)
        .order_by("annotation_id", "start")
        .values_list("annotation_id", "start", "end", "word", "referent")
    ):
        referents.setdefault(annotation_id, []).append([start, end, word, referent])
    for row in rows:
        row["rater"] = HUMAN
        if not origin_column:
            row["origin"] = HUMAN
        row["spans"] = spans.get(row["id"], [])
        row["referents"] = referents.get(row["id"], [])


def _jsonl(rows: list[dict]) -> bytes:
    encode = DjangoJSONEncoder(ensure_ascii=False).encode
    return "".join(encode(row) + "\n" for row in rows).encode()


def row_columns(table: Table) -> set[str]:
    return {column.name for column in table.model._meta.concrete_fields}


def _manifest(*, scope: Scope, pseudonyms: dict[int, str], files: dict[str, dict], report: dict, notes: bool) -> dict:
    pool = scope.pool
    jobs = Job.objects.filter(pk__in=scope.job_ids).select_related("model", "generation_run__dataset").order_by("pk")
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(),
        "concord": {"version": VERSION, "commit": concord_commit()},
        "pool": {
            "name": pool.name,
            "labels": list(pool.labels),
            "items": pool.items.count(),
            "guideline_version": pool.guideline_version,
            # The draw (docs/domain.md, 'The annotation pool'): the jobs it drew from, generations per cell, seed.
            "draw": {
                "jobs": sorted(pool.jobs.values_list("pk", flat=True)),
                "per_cell": pool.per_cell,
                "seed": pool.seed,
            },
        },
        "guidelines": [
            {"version": g.version, "created_at": g.created_at.isoformat(), "text": g.text}
            for g in pool.guidelines.order_by("version")
        ],
        "datasets": [dataset_provenance(d) for d in Dataset.objects.filter(pk__in=scope.dataset_ids).order_by("pk")],
        "models": [model_provenance(m) for m in LanguageModel.objects.filter(pk__in=scope.model_ids).order_by("pk")],
        # Each job's parameters as its kind gives them (a generation job's decoding and seed, a judge run's).
        "jobs": [
            {
                "id": job.pk,
                "kind": job.kind,
                "model": job.model.name,
                "dataset": job.dataset.name if job.dataset else None,
                **job_kind_handler(job.kind).parameters(job=job),
                "status": job.status,
            }
            for job in jobs
        ],
        "judges": [
            {
                "name": judge.name,
                "version": judge.version,
                "model": judge.model.name,
                "mode": judge.mode,
                "template": judge.template,
                "options": judge.options,
            }
            for judge in Judge.objects.filter(name__in=scope.judge_names)
            .select_related("model")
            .order_by("name", "version")
        ],
        "people": sorted(set(pseudonyms.values())),
        # Notes are free text for the team: in a bundle only when the export was told to include them.
        "notes": notes,
        "warnings": [NOTES_WARNING] if notes else [],
        "report": {
            "file": REPORT_FILE,
            "figures": figures_compare(bundled=report, recomputed=report)["figures"],
            "human_verdict": report.get("human_verdict"),
            "examples_seed": report.get("examples_seed"),
        },
        "files": files,
    }


def study_export(*, pool: Pool, out: str | Path | IO[bytes], user=None, notes: bool = False) -> dict:
    """Write the pool's study bundle to `out` (a path or a binary file); returns the manifest. Annotation and
    adjudication notes stay out unless `notes` (the manifest then warns). The audit trail records who exported it
    (`user`; None for the command)."""
    scope = Scope.of(pool)
    pseudonyms = study_pseudonyms(pool=pool)
    users = get_user_model().objects.in_bulk(list(pseudonyms))
    names = {users[uid].get_username(): name for uid, name in pseudonyms.items()}
    # The pool's report as the pages show it (cached per data version: built once while nothing changes).
    report = json.loads(report_json(report=report_build(pool=pool)))
    report = _pseudonymised(report, names)
    payloads: dict[str, bytes] = {}
    files: dict[str, dict] = {}
    for table in TABLES:
        rows = _table_rows(table, scope, pseudonyms, notes=notes)
        payloads[f"{table.name}.jsonl"] = _jsonl(rows)
        files[f"{table.name}.jsonl"] = {"rows": len(rows)}
    payloads[REPORT_FILE] = json.dumps(report, indent=1, ensure_ascii=False).encode()
    files[REPORT_FILE] = {"rows": None}
    for name, data in payloads.items():
        files[name]["sha256"] = hashlib.sha256(data).hexdigest()
        files[name]["bytes"] = len(data)
    manifest = _manifest(scope=scope, pseudonyms=pseudonyms, files=files, report=report, notes=notes)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST_FILE, json.dumps(manifest, indent=1, ensure_ascii=False))
        for name, data in payloads.items():
            archive.writestr(name, data)
    if isinstance(out, str | Path):
        Path(out).write_bytes(buffer.getvalue())  # whole or not at all: no half-written archive is left behind
    else:
        out.write(buffer.getvalue())
    audit_record(
        event="study.export",
        obj=pool,
        actor=user,
        data={"figures": manifest["report"]["figures"], "bytes": buffer.tell(), "notes": notes},
    )
    return manifest
