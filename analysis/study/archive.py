"""Reading a study bundle's archive safely (docs/domain.md, 'A study others can check'; the limits:
docs/operations.md, "Study bundles").

Nothing of an archive is trusted before it is checked: each member's declared size is compared with the limits before
anything is decompressed, and each member is then read as a stream that stops at the limit (a header may lie); the
archive may hold only `manifest.json` and the files the manifest lists, each once. The manifest and the report must
be JSON objects of the expected shape, and every data file's line a JSON object with an integer `id` found on no other
line. Every refusal is a `BundleError` naming the file, the line where there is one, and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from analysis.study.tables import FORMAT, FORMAT_VERSION, TABLES
from common.json_input import json_loads

REPORT_FILE = "report.json"
MANIFEST_FILE = "manifest.json"
READ_BLOCK = 1 << 20
MB = 1024 * 1024


class BundleError(ValueError):
    """The archive is not a bundle this Concord can read or import; nothing was written. Reads
    `FILE:LINE: what` (or `FILE: what` where no line applies)."""

    def __init__(self, what: str, *, file: str = "", line: int | None = None):
        self.what, self.file, self.line = what, file, line
        where = f"{file}:{line}: " if file and line is not None else f"{file}: " if file else ""
        super().__init__(f"{where}{what}")


def max_file_bytes() -> int:
    return settings.CONCORD_STUDY_MAX_FILE_MB * MB


def max_total_bytes() -> int:
    return settings.CONCORD_STUDY_MAX_TOTAL_MB * MB


def is_id(value: Any) -> bool:
    """A row id or reference: an integer, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def json_line(text: str, key: str) -> int:
    """The line of a pretty-printed JSON document where `"key":` first appears (1 when it does not)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if f'"{key}":' in line:
            return number
    return 1


@dataclass
class Bundle:
    manifest: dict
    files: dict[str, bytes]
    changed_files: list[str] = field(default_factory=list)
    manifest_text: str = ""
    _rows: dict[str, list[tuple[int, dict]]] = field(default_factory=dict, repr=False)

    def numbered_rows(self, table: str) -> list[tuple[int, dict]]:
        """(line, row) for each row of `<table>.jsonl`; a line that is not a JSON object with an integer id, or an id
        already used on an earlier line, is refused."""
        if table in self._rows:
            return self._rows[table]
        name = f"{table}.jsonl"
        try:
            text = self.files.get(name, b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BundleError(f"not UTF-8 text: {exc}", file=name) from None
        rows: list[tuple[int, dict]] = []
        first_line: dict[int, int] = {}
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json_loads(line)
            except json.JSONDecodeError as exc:
                raise BundleError(f"not JSON: {exc.msg} (column {exc.colno})", file=name, line=number) from None
            if not isinstance(row, dict):
                raise BundleError(f"a row must be a JSON object, not {type(row).__name__}", file=name, line=number)
            if not is_id(row.get("id")):
                raise BundleError(f"id must be an integer, not {row.get('id')!r}", file=name, line=number)
            if row["id"] in first_line:
                raise BundleError(
                    f"id {row['id']} appears again (first on line {first_line[row['id']]})", file=name, line=number
                )
            first_line[row["id"]] = number
            rows.append((number, row))
        self._rows[table] = rows
        return rows

    def rows(self, table: str) -> list[dict]:
        return [row for _, row in self.numbered_rows(table)]

    def has_rows(self, table: str) -> bool:
        """Whether `table`'s rows are read or derived already (a derived table has no file of its own)."""
        return table in self._rows

    def rows_derive(self, table: str, rows: list[tuple[int, dict]]) -> None:
        """Give `table` rows made from other tables' (an older format's upgrade), each on the line it came from."""
        self._rows[table] = rows

    def report(self) -> dict:
        try:
            report = json_loads(self.files[REPORT_FILE])
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            line = getattr(exc, "lineno", None)
            raise BundleError(f"malformed: {exc}", file=REPORT_FILE, line=line) from None
        if not isinstance(report, dict):
            raise BundleError(
                f"the report must be a JSON object, not {type(report).__name__}", file=REPORT_FILE, line=1
            )
        return report

    def pool_name(self) -> str | None:
        name = self.manifest.get("pool", {}).get("name")
        return name if isinstance(name, str) else None


def study_bundle_read(source: str | Path | IO[bytes]) -> Bundle:
    """The bundle's manifest and files, checked; BundleError says what is wrong. A file whose SHA-256 is not the
    manifest's is kept and named in `changed_files` (verification goes on, an import refuses it)."""
    try:
        archive = zipfile.ZipFile(source)
    except FileNotFoundError:
        raise BundleError(f"no such file: {source}") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise BundleError(f"not a study bundle (not a readable zip archive, perhaps truncated): {exc}") from None
    with archive:
        infos = archive.infolist()
        names = [info.filename for info in infos]
        if MANIFEST_FILE not in names:
            raise BundleError(f"not a study bundle: {MANIFEST_FILE} is missing")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise BundleError("the archive holds this member more than once", file=repeated[0])
        _sizes_checked(infos)
        budget = [max_total_bytes()]
        manifest_text = _read(archive, archive.getinfo(MANIFEST_FILE), budget)
        manifest = _manifest(manifest_text)
        listed = manifest["files"]
        unlisted = sorted(set(names) - set(listed) - {MANIFEST_FILE})
        if unlisted:
            raise BundleError(
                f"not listed in {MANIFEST_FILE}: a bundle holds only the files it lists", file=unlisted[0]
            )
        missing = sorted(name for name in listed if name not in names)
        if missing:
            raise BundleError(f"the bundle is incomplete: {', '.join(missing)} missing (listed in {MANIFEST_FILE})")
        _members_checked(infos)
        files = {name: _read(archive, archive.getinfo(name), budget) for name in listed}
    changed = sorted(name for name, data in files.items() if hashlib.sha256(data).hexdigest() != listed[name]["sha256"])
    return Bundle(manifest=manifest, files=files, changed_files=changed, manifest_text=manifest_text.decode("utf-8"))


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    """What keeps a member from being one of a bundle's files: each is a plain file at the archive's top level."""
    name = info.filename
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link; a bundle holds only plain files"
    if info.is_dir() or not name or name.startswith((".", "/", "\\")) or "/" in name or "\\" in name or ":" in name:
        return "not a plain file name; a bundle's files sit at the top of the archive (no folders, no .., no /)"
    return None


def _members_checked(infos: list[zipfile.ZipInfo]) -> None:
    """Refuse, before reading the files, a member that is a link, a folder or a path out of the archive (`../../x`,
    `/etc/x`): nothing is ever written from a bundle's members, but such a bundle was not made by Concord."""
    for info in infos:
        if problem := _member_problem(info):
            raise BundleError(problem, file=repr(info.filename)[1:-1])


def _sizes_checked(infos: list[zipfile.ZipInfo]) -> None:
    """Refuse, before decompressing anything, a member or an archive whose declared size is over the limits."""
    per_file, total = max_file_bytes(), max_total_bytes()
    for info in infos:
        if info.file_size > per_file:
            raise BundleError(
                f"{info.file_size} bytes decompressed, over the limit of {per_file} per file (STUDY_MAX_FILE_MB)",
                file=info.filename,
            )
    declared = sum(info.file_size for info in infos)
    if declared > total:
        raise BundleError(
            f"the archive holds {declared} bytes decompressed, over the limit of {total} (STUDY_MAX_TOTAL_MB)"
        )


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: list[int]) -> bytes:
    """The member's bytes, read as a stream that stops at the per-file limit and at what is left of the total."""
    limit = min(max_file_bytes(), budget[0])
    chunks, size = [], 0
    try:
        with archive.open(info) as stream:
            while block := stream.read(min(READ_BLOCK, limit + 1 - size)):
                size += len(block)
                if size > limit:
                    raise BundleError(
                        f"decompresses to more than {limit} bytes (STUDY_MAX_FILE_MB, STUDY_MAX_TOTAL_MB)",
                        file=info.filename,
                    )
                chunks.append(block)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(f"cannot be read (the archive is damaged or truncated): {exc}", file=info.filename) from None
    budget[0] -= size
    return b"".join(chunks)


def _manifest(data: bytes) -> dict:
    try:
        text = data.decode("utf-8")
        manifest = json_loads(text)
    except UnicodeDecodeError as exc:
        raise BundleError(f"malformed: {exc}", file=MANIFEST_FILE) from None
    except json.JSONDecodeError as exc:
        raise BundleError(f"malformed: {exc.msg} (column {exc.colno})", file=MANIFEST_FILE, line=exc.lineno) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"not a Concord study manifest (format {FORMAT!r})", file=MANIFEST_FILE, line=1)
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError("no valid format_version", file=MANIFEST_FILE, line=json_line(text, "format_version"))
    if version > FORMAT_VERSION:
        raise BundleError(
            f"the bundle's format version {version} is newer than this Concord reads ({FORMAT_VERSION}): upgrade Concord"
        )
    pool = manifest.get("pool", {})
    if not isinstance(pool, dict) or not isinstance(pool.get("name", ""), str):
        raise BundleError("pool must be an object with a name", file=MANIFEST_FILE, line=json_line(text, "pool"))
    files = manifest.get("files")
    required = {f"{table.name}.jsonl" for table in TABLES if table.since <= version} | {REPORT_FILE}
    if not isinstance(files, dict) or not required <= set(files):
        absent = sorted(required - set(files)) if isinstance(files, dict) else ["files"]
        raise BundleError(f"does not list {', '.join(absent)}", file=MANIFEST_FILE, line=json_line(text, "files"))
    for name, entry in files.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise BundleError(f"lists {name} without its sha256", file=MANIFEST_FILE, line=json_line(text, name))
    return manifest
