"""Presentation of report tables on the page and in the standalone HTML (docs/domain.md, 'Reports and figures'): human headings
and column names, numbers to 3 decimals, intervals as [low, high] in one column, numeric cells right-aligned."""

from __future__ import annotations

import re

from django import template

from analysis.report.exports.tex import KAPPA_BEYOND_MARK, KAPPA_BEYOND_NOTE, kappa_ci_beyond_bounds
from analysis.report.parts import INTER_ANNOTATOR_VIEWS
from analysis.report.tables import TABLES_BY_KEY
from annotation.schema import label_display

register = template.Library()

NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


@register.filter
def label_name(label: object) -> str:
    """One spelling per label wherever it is shown: `no_pronoun` reads "no pronoun"."""
    return label_display(label)


@register.filter
def table_total(table: dict[str, dict[str, int]]) -> int:
    """The count in a confusion table: 0 means it has nothing to show (a sentence replaces its zeros)."""
    return sum(sum(counts.values()) for counts in table.values())


@register.filter
def table_title(name: str) -> str:
    """A table's declared title (analysis/report/tables/)."""
    return TABLES_BY_KEY[name].title


def column_title(table: str, name: str) -> str:
    """A column's declared title; a column named from the data (a label of the pool) reads as its name."""
    return TABLES_BY_KEY[table].column_title(name) or name.replace("_", " ")


@register.filter
def presented_all(tables: list[dict]) -> list[dict]:
    """Every display table presented, a table declared with parts (the inter-annotator one: its two-rater and
    all-rater parts) split into them."""
    result = []
    for table in tables:
        parts = TABLES_BY_KEY[table["name"]].parts
        claimed = [c for part in parts for c in part.columns or ()]
        if not any(c in table["columns"] for c in claimed):
            result.append(presented(table))
            continue
        first = table["columns"][0]
        keys = [c for c in TABLES_BY_KEY[table["name"]].part_keys if c in table["columns"] and c != first]
        for declared in parts:
            if declared.columns is None:
                columns = [c for c in table["columns"] if c not in claimed]
            else:
                columns = [first, *keys, *(c for c in declared.columns if c in table["columns"])]
            if _nothing_measured(table, [c for c in columns if c != first and c not in keys]):
                continue  # e.g. the probability-based part of an imported pool's accuracy
            part = {
                "titles": table.get("titles", {}),
                "fills": table.get("fills", ""),
                "name": table["name"],
                "columns": columns,
                "rows": [[row[table["columns"].index(c)] for c in columns] for row in table["rows"]],
            }
            result.append({**presented(part), "name": declared.key, "title": declared.title, "csv": table["name"]})
    return result


@register.filter
def presented(table: dict) -> dict:
    """A display table (`name`, `columns`, `rows` of strings) with `<x>_low`/`<x>_high` merged into one `[low, high]`
    column, human column names, and each cell marked numeric or not. A column with nothing in any row (every cell
    "—": a job without probability scores, a pool nobody annotated yet) is left out; the CSV keeps it."""
    columns = list(table["columns"])
    merged: list[tuple[str, list[int]]] = []
    skip: set[int] = set()
    for i, column in enumerate(columns):
        if i in skip:
            continue
        if column.endswith("_low") and f"{column.removesuffix('_low')}_high" in columns:
            j = columns.index(f"{column.removesuffix('_low')}_high")
            skip.add(j)
            merged.append((column.removesuffix("_low"), [i, j]))
        else:
            merged.append((column, [i]))
    rows = []
    marked = False
    for row in table["rows"]:
        cells = []
        for name, indices in merged:
            if len(indices) == 2:
                low, high = row[indices[0]], row[indices[1]]
                text = "—" if "—" in (low, high) else f"[{low}, {high}]"
                estimate = _estimate_column(name, columns)
                if text == "—" and estimate is not None and row[estimate] != "—":
                    text = "undefined"  # a defined figure whose interval is null: of zero width (docs/domain.md)
                if table["name"] == "prob_vs_gen" and name == "kappa_ci" and _beyond(low, high):
                    text, marked = f"{text} {KAPPA_BEYOND_MARK}", True
                cells.append({"text": text, "num": text != "—"})
            else:
                text = row[indices[0]]
                if merged[len(cells)][0] == "measure":
                    text = INTER_ANNOTATOR_VIEWS.get(text, text)
                cells.append({"text": text, "num": bool(NUMBER.match(text)) or text == "—"})
        rows.append(cells)
    kept = [index for index in range(len(merged)) if any(row[index]["text"] not in ("—", "") for row in rows)]
    if rows and len(kept) < len(merged):
        merged = [merged[index] for index in kept]
        rows = [[row[index] for index in kept] for row in rows]
    return {
        "name": table["name"],
        "csv": table["name"],
        "fills": table.get("fills", ""),
        "title": table_title(table["name"]),
        "columns": [
            {"name": name, "title": table.get("titles", {}).get(name) or column_title(table["name"], name), "num": None}
            for name, _ in merged
        ],
        "rows": rows,
        "note": f"{KAPPA_BEYOND_MARK} {KAPPA_BEYOND_NOTE}" if marked else "",
    }


def _nothing_measured(table: dict, columns: list[str]) -> bool:
    """Whether a part's own columns hold no figure in any row (counts aside: they are 0 where nothing was measured)."""
    measures = [table["columns"].index(c) for c in columns if c != "n" and not c.endswith("_n")]
    return bool(measures) and all(row[i] in ("—", "") for row in table["rows"] for i in measures)


def _estimate_column(interval: str, columns: list[str]) -> int | None:
    """The column of the figure an interval column (`kappa_ci`, `cohen_kappa_boot_ci`) belongs to, if the table has
    it."""
    for suffix in ("_boot_ci", "_ci"):
        if interval.endswith(suffix) and interval.removesuffix(suffix) in columns:
            return columns.index(interval.removesuffix(suffix))
    return None


def _beyond(low: str, high: str) -> bool:
    """Whether a displayed kappa interval reaches past [-1, 1]."""
    try:
        return kappa_ci_beyond_bounds([float(low), float(high)])
    except ValueError:
        return False


@register.filter
def presented_empty(tables: list[dict]) -> list[dict]:
    """The tables without rows, each with what would fill it: the page lists them instead of printing them empty."""
    return [table for table in presented_all(tables) if not table["rows"]]
