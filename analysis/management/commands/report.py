"""python manage.py report --pool NAME --format json|csv|html|latex [--out PATH] [--table NAME]"""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis import exports
from analysis.services import report_build
from annotation.models import Pool


class Command(BaseCommand):
    help = (
        "Write a pool's agreement report. json/html/latex go to stdout without --out. csv writes a zip of every table "
        "(to --out, or stdout), one CSV per table when --out is an existing directory, or one table with --table."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", choices=exports.FORMATS, default="json")
        parser.add_argument("--out", help="file (or, for csv, a directory) to write")
        parser.add_argument("--table", choices=exports.CSV_TABLES, help="csv only: just this table, as a plain CSV")

    def handle(self, *args, pool: str, format: str, out: str | None, table: str | None, **options) -> None:
        try:
            pool_row = Pool.objects.get(name=pool)
        except Pool.DoesNotExist as error:
            raise CommandError(f"No pool named {pool!r}.") from error
        if table and format != "csv":
            raise CommandError("--table goes with --format csv.")
        report = report_build(pool=pool_row)
        target = Path(out) if out else None
        if format == "csv" and target is not None and target.is_dir() and not table:
            for name in exports.CSV_TABLES:
                (target / f"{name}.csv").write_text(exports.report_csv(report=report, table=name), encoding="utf-8")
            self.stderr.write(f"Wrote {len(exports.CSV_TABLES)} CSV files to {target}")
            return
        if format == "csv":
            body: str | bytes = (
                exports.report_csv(report=report, table=table) if table else exports.report_csv_zip(report=report)
            )
        elif format == "json":
            body = exports.report_json(report=report)
        elif format == "html":
            body = exports.report_html(report=report)
        else:
            body = exports.report_latex(report=report)
        if target is None:
            if isinstance(body, bytes):
                sys.stdout.buffer.write(body)
                sys.stdout.buffer.flush()
            else:
                self.stdout.write(body, ending="" if body.endswith("\n") else "\n")
            return
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body, encoding="utf-8")
        self.stderr.write(f"Wrote {target}")
