"""The report as LaTeX: the declared tables' LaTeX tables (analysis/report/tables/), in the report's order."""

from __future__ import annotations

from analysis.report.table import LatexTable, Table
from analysis.report.tables import TABLES

# The LaTeX tables by name, in the order of the full export, each with the table that declares it; `--table NAME`
# gives one.
LATEX_TABLES: dict[str, tuple[LatexTable, Table]] = {
    table.latex.name: (table.latex, table) for table in TABLES if table.latex is not None
}


# Not a table: the methods section drawn from the study's records (analysis/report/exports/methods.py), given on
# its own (`--table methods`, `?table=methods`).
METHODS = "methods"


def report_latex(*, report: dict, table: str | None = None) -> str:
    """The main tables in booktabs LaTeX, or the one named `table` (or the methods section, `methods`). An empty
    table is not emitted: a LaTeX comment says what would fill it."""
    if table == METHODS:
        from analysis.report.exports.methods import report_methods_latex

        return report_methods_latex(report) or "% methods: nothing recorded yet; filled by a pool with annotations.\n"
    parts = []
    for name in [table] if table is not None else list(LATEX_TABLES):
        _, declared = LATEX_TABLES[name]
        fills = declared.fills(report)
        rendered = declared.latex_text(report)
        if rendered.strip():
            parts.append(rendered)
        else:
            parts.append(f"% {name.replace('_', ' ')}: no rows yet; filled by {fills}.\n")
    return "\n".join(parts)
