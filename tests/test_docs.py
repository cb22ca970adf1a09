"""Every reference to a section of docs/domain.md, in code and docs, names a section that exists.

References are written `docs/domain.md, 'Section'` (or with double quotes or asterisks, several joined by `and` or
commas, wrapped over comment lines) and, in Markdown, `domain.md#anchor`. A section is a `##` or `###` heading.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOMAIN = REPO / "docs" / "domain.md"
THIS = Path(__file__).resolve()  # its examples name sections that do not exist
SKIPPED_DIRS = {".git", ".venv", "node_modules", "var", "__pycache__", "staticfiles", ".mypy_cache", ".ruff_cache"}
SUFFIXES = {".py", ".md", ".js", ".html", ".txt", ".yml", ".yaml", ".sh", ".toml", ".ini", ".cfg"}
QUOTES = "'\"*"
# A line break and what continues a comment or a quote on the next line.
WRAP = re.compile(r"\s*\n\s*(?:#+|//+|\*(?!\w)|>)?\s*")
REFERENCE = re.compile(r"domain\.md(?:,\s*|\s+)(?=[" + re.escape(QUOTES) + "])")
ANCHOR = re.compile(r"domain\.md#([\w-]+)")


def headings() -> list[str]:
    return [line.lstrip("#").strip() for line in DOMAIN.read_text().splitlines() if re.match(r"#{2,3} ", line)]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def sources() -> list[Path]:
    """The project's text files: the walk never enters a virtual environment (.venv, .venv-vllm), a cache or var/."""
    found = []
    for directory, subdirectories, files in os.walk(REPO):
        subdirectories[:] = [d for d in subdirectories if d not in SKIPPED_DIRS and not d.startswith(".venv")]
        for name in files:
            path = Path(directory, name)
            if path.suffix in SUFFIXES and path != THIS:
                found.append(path)
    return found


def named_sections(text: str, known: list[str]) -> list[str]:
    """The section names quoted after each `domain.md,` in the text (line breaks inside them joined)."""
    text = WRAP.sub(" ", text)
    longest_first = sorted(known, key=len, reverse=True)
    names = []
    for match in REFERENCE.finditer(text):
        at = match.end()
        while at < len(text) and text[at] in QUOTES:
            quote, rest = text[at], text[at + 1 :]
            # A known heading closed by the same quote (a heading may itself hold an apostrophe), else up to the quote.
            name = next((h for h in longest_first if rest.startswith(h + quote)), rest.split(quote, 1)[0])
            names.append(name)
            at += len(name) + 2
            joiner = re.match(r"\s*(?:,|and)\s*(?=[" + re.escape(QUOTES) + "])", text[at:])
            if not joiner:
                break
            at += joiner.end()
    return names


def test_the_reference_reader_finds_quoted_wrapped_and_joined_names():
    known = ["Metrics", "Assignment and the annotator's queue", "Multi-rater statistics"]
    text = (
        "x (docs/domain.md, 'Metrics' and 'Multi-rater\n    # statistics'), y (docs/domain.md,\n"
        "'Assignment and the annotator's queue'), z docs/domain.md *Nowhere*, docs/domain.md states it"
    )
    assert named_sections(text, known) == [
        "Metrics",
        "Multi-rater statistics",
        "Assignment and the annotator's queue",
        "Nowhere",
    ]


def test_every_domain_section_named_in_code_and_docs_exists():
    known = headings()
    anchors = {anchor(heading) for heading in known}
    missing = []
    for path in sources():
        text = path.read_text(errors="replace")
        where = path.relative_to(REPO)
        missing += [f"{where}: '{name}'" for name in named_sections(text, known) if name not in known]
        missing += [f"{where}: #{slug}" for slug in ANCHOR.findall(text) if slug not in anchors]
    assert missing == [], "sections of docs/domain.md that do not exist:\n" + "\n".join(missing)
