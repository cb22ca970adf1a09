"""Reading the text files users hand to Concord (templates, name lists, generation samples)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from common.errors import ServiceError

MAX_ERRORS_SHOWN = 20


class InputErrors(ServiceError, ValueError):
    """Problems found in input files, each "PATH:LINE: problem"; nothing was written. The message lists the first
    few; `errors` keeps them all."""

    heading = ""
    indent = ""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        lines = [self.indent + error for error in self.errors[:MAX_ERRORS_SHOWN]]
        if len(self.errors) > MAX_ERRORS_SHOWN:
            lines.append(f"{self.indent}... and {len(self.errors) - MAX_ERRORS_SHOWN} more")
        super().__init__(self.heading + "\n".join(lines))

    def body(self) -> dict[str, object]:
        return {"detail": "import failed, nothing was written", "errors": self.errors}

    def form_errors(self) -> list[tuple[str | None, str, str]]:
        return [(None, error, error) for error in self.errors[:MAX_ERRORS_SHOWN]]


class UnreadableFile(ValueError):
    """The file cannot be read as UTF-8 text; the message is "PATH[:LINE]: problem"."""


def read_utf8(path: Path) -> tuple[bytes, str]:
    """The file's bytes and its text (a UTF-8 byte-order mark is dropped). A bad byte is reported with its line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return raw, decode_utf8(raw, name=str(path))


def decode_utf8(raw: bytes, *, name: str) -> str:
    """Bytes already in hand (an upload) as text, with the same rules and messages as `read_utf8`."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UnreadableFile(
            f"{name}:{line}: not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); save the file as UTF-8"
        ) from None


def nul_problems(cells: Mapping[str, str], *, name: str, line: int) -> list[str]:
    """`FILE:LINE: column: holds a NUL character` for each cell of a row that holds one (PostgreSQL cannot store
    it, and a page that shows it breaks): the one check of every file a user hands Concord."""
    return [f"{name}:{line}: {column}: holds a NUL character" for column, value in cells.items() if "\x00" in value]
