"""The report's tables, each declared once (a `Table`, analysis/report/table.py), in the order of the report: its
JSON keys, its CSV files, its page and its LaTeX tables.

Everything else reads `TABLES`: `report_data` (analysis/report/build.py) calls each builder, the CSV, LaTeX and HTML
exports (analysis/report/exports/) and the page (analysis/templatetags/report_format.py) take their titles, columns,
empty headers and sentences from here, the figures (analysis/plots) which tables they draw, and the API schema
(analysis/apis.py) each table's row type. The declarations live by subject: people.py (what people said),
automatic.py (the models' results), machine.py (LLM judges and the judge's verdict), active.py
(spending people's labels: active pools, stratified PPI, the label budget).
"""

from __future__ import annotations

from typing import Any

from analysis.report.table import Table
from analysis.report.tables import active, automatic, gifi, machine, people

TABLES: tuple[Table[Any], ...] = (
    *people.AGREEMENT,
    *people.AGAINST_HEURISTIC,
    *automatic.MODELS,
    *people.ITEMS,
    *machine.JUDGES,
    *active.BUDGET,
    *people.AGGREGATES,
    *automatic.DISTRACTORS,
    *automatic.RANKINGS,
    *gifi.GIFI,
    *people.GUIDELINES,
)

TABLES_BY_KEY: dict[str, Table[Any]] = {table.key: table for table in TABLES}
