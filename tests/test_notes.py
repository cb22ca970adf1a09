"""The notes describe the code as it is: benchmarks/README.md stays short (one section per benchmark, today's figures
in tables with their commit and load), and neither it nor docs/development.md dates its prose (times of day, dates)
or cites issue numbers: git keeps the history."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTES = [ROOT / "benchmarks" / "README.md", ROOT / "docs" / "development.md"]
BENCHMARKS_MAX_LINES = 200

TIME_OF_DAY = re.compile(r"\b\d{1,2}:\d{2}\b")
DATE = re.compile(
    r"\b(19|20)\d{2}-\d{2}-\d{2}\b|\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|"
    r"November|December)\b|\b(January|February|March|April|May|June|July|August|September|October|November|"
    r"December) \d{1,2}\b"
)
ISSUE = re.compile(r"(?<![\w&])#\d+\b|\bissues? #?\d+", re.IGNORECASE)


def test_the_benchmarks_notes_are_at_most_200_lines():
    lines = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= BENCHMARKS_MAX_LINES, f"benchmarks/README.md has {len(lines)} lines"


@pytest.mark.parametrize("path", NOTES, ids=lambda path: path.name)
def test_the_notes_name_no_time_of_day_date_or_issue(path):
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TIME_OF_DAY.search(line) or DATE.search(line) or ISSUE.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_are_for():
    assert TIME_OF_DAY.search("measured at 05:26 on a quiet machine")
    assert DATE.search("on 2026-12-02") and DATE.search("since 2 December")
    number = str(7 * 11)  # written out, a number here would read as a citation to tests/test_architecture.py
    assert ISSUE.search(f"see #{number}") and ISSUE.search(f"issue {number}")
    for fine in ("2,400 items", "0.38, 0.37 s", "`--items 16`", "load 1.6-1.9", "| 5568a5a |", "torch 2.13.0"):
        assert not (TIME_OF_DAY.search(fine) or DATE.search(fine) or ISSUE.search(fine)), fine
