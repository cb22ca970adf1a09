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


# What a section's first line may start with besides a capital: a code span, a link, emphasis, a list, a table, a
# fenced block, a quote, an image, a number ("3 workers ...").
SECTION_OPENING = re.compile(r"[A-Z0-9`\[*_|>!-]|```")


def section_openings(text: str) -> list[tuple[str, str]]:
    """(heading, first line of its text) for each heading of a Markdown page, fenced code skipped."""
    openings, heading, fenced = [], None, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            if heading is not None:
                openings.append((heading, line))
                heading = None
            continue
        if fenced:
            continue
        if re.match(r"#{1,6} ", line):
            heading = line.lstrip("#").strip()
        elif heading is not None and line.strip():
            openings.append((heading, line.strip()))
            heading = None
    return openings


def starts_mid_sentence(line: str) -> bool:
    """Not a capital, code span or block; or a parenthesis closed that the line never opened ("JSON) and ...")."""
    if not SECTION_OPENING.match(line):
        return True
    depth = 0
    for character in re.sub(r"`[^`]*`", "", line):
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth < 0:
            return True
    return False


def test_a_line_that_closes_a_parenthesis_it_never_opened_starts_mid_sentence():
    assert starts_mid_sentence("JSON) and browsable with Swagger UI")
    assert starts_mid_sentence("and browsable")
    assert not starts_mid_sentence("The schema (OpenAPI 3, `a)`) is served")
    assert not starts_mid_sentence("`manage.py` runs it")


def test_the_opening_reader_takes_each_sections_first_line():
    text = "# Page\n\nIntro.\n\n## Schema\n\nJSON) and more\n\n```\n# not a heading\n```\n## Next\n- a list\n"
    assert section_openings(text) == [("Page", "Intro."), ("Schema", "JSON) and more"), ("Next", "- a list")]


def test_every_docs_section_starts_with_a_capital_or_a_code_span():
    pages = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    broken = [
        f"{page.relative_to(REPO)}, '{heading}': {line[:60]}"
        for page in pages
        for heading, line in section_openings(page.read_text())
        if starts_mid_sentence(line)
    ]
    assert broken == [], "sections that start mid-sentence:\n" + "\n".join(broken)
