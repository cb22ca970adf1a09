"""The report as CSV: one file per declared table (analysis/report/tables/), zipped when more than one. Every CSV
goes through `common.safe_csv`; a table without rows still has its header, so that an empty file says what it would
hold (columns that depend on the data, a pool's own labels or the shares of sigma, are those of the default schema)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

from analysis.report.parts import clean, flatten
from analysis.report.tables import TABLES, TABLES_BY_KEY
from common.safe_csv import SafeDictWriter

# Every table, one CSV each, in the report's order.
CSV_TABLES = [table.key for table in TABLES]


def report_table_rows(*, report: dict, table: str) -> list[dict]:
    """The rows of one CSV table."""
    declared = TABLES_BY_KEY[table]
    if declared.flat is not None:
        return declared.flat(report)
    return [flatten(row) for row in declared.typed_rows(report)]


def _written(rows: list[dict], table: str) -> list[dict]:
    """Each cell in its column's CSV form (`Column.csv`: a duration to the millisecond, say)."""
    declared = TABLES_BY_KEY[table]
    forms: dict[str, Callable[[object], object]] = {}
    for key in {k for row in rows for k in row}:
        column = declared.column(key)
        if column is not None and column.csv is not None:
            forms[key] = column.csv
    if not forms:
        return rows
    return [{k: forms[k](v) if k in forms else v for k, v in row.items()} for row in rows]


def report_csv(*, report: dict, table: str) -> str:
    """One table as CSV; a table without rows still has its declared header."""
    rows = _written(report_table_rows(report=report, table=table), table)
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    if not columns:
        columns = list(TABLES_BY_KEY[table].header)
    buffer = io.StringIO()
    writer = SafeDictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(clean(rows))
    return buffer.getvalue()


def report_csv_zip(*, report: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for table in CSV_TABLES:
            archive.writestr(f"{report['pool']}/{table}.csv", report_csv(report=report, table=table))
    return buffer.getvalue()
