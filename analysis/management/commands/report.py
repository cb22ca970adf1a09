"""python manage.py report --pool NAME --format json|csv|html|latex [--out PATH] [--table NAME] [--seed N]
[--human majority|dawid_skene|mace|first] [--epsilon E] [--alpha A] [--delta D] [--q Q] [--min-items N]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.report.exports import render
from analysis.report.exports.csv import CSV_TABLES, report_csv
from analysis.selectors.examples import EXAMPLES_SEED, seed_parse
from analysis.selectors.human import HUMAN_VERDICTS
from analysis.selectors.verdict import ALT_TEST_Q, DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_EPSILON, MIN_ITEMS
from analysis.services import report_build
from annotation.models import Pool
from annotation.selectors.aggregate import AggregationError


def _seed(raw: str) -> int:
    try:
        return seed_parse(raw)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


class Command(BaseCommand):
    help = (
        "Write a pool's agreement report. json/html/latex go to stdout without --out. csv writes a zip of every table "
        "(to --out, or stdout), one CSV per table when --out is an existing directory, or one table with --table. "
        "latex writes every main table, or one with --table (e.g. --table examples: the qualitative examples)."
    )

    def add_arguments(self, parser) -> None:
        tables = sorted({t for fmt in render.FORMATS for t in render.report_tables_for(fmt)})
        parser.add_argument("--pool", required=True, help="pool name")
        parser.add_argument("--format", choices=render.FORMATS, default="json")
        parser.add_argument("--out", help="file (or, for csv, a directory) to write")
        parser.add_argument(
            "--table", choices=tables, help="just this table (csv: a plain CSV; latex: one table; json: its rows)"
        )
        parser.add_argument(
            "--seed",
            type=_seed,
            default=EXAMPLES_SEED,
            help=f"seed of the qualitative examples' draw (default {EXAMPLES_SEED}, the paper's)",
        )
        parser.add_argument(
            "--human",
            choices=HUMAN_VERDICTS,
            help="the human label compared with the heuristic: an aggregate of the ratings (majority, dawid_skene, "
            "mace) or the first annotation (first); default: the adjudicated label, else the majority",
        )
        parser.add_argument(
            "--epsilon",
            type=float,
            default=DEFAULT_EPSILON,
            help=f"the judge's verdict: the Alternative Annotator Test's epsilon, in [0, 1) (default {DEFAULT_EPSILON})",
        )
        parser.add_argument(
            "--alpha",
            type=float,
            default=DEFAULT_ALPHA,
            help=f"selective judging: the disagreement the judge may have, in (0, 1) (default {DEFAULT_ALPHA})",
        )
        parser.add_argument(
            "--delta",
            type=float,
            default=DEFAULT_DELTA,
            help=f"selective judging: the chance the guarantee fails, in (0, 1) (default {DEFAULT_DELTA})",
        )
        parser.add_argument(
            "--q",
            type=float,
            default=ALT_TEST_Q,
            help=f"the Alternative Annotator Test's Benjamini-Yekutieli level, in (0, 1) (default {ALT_TEST_Q})",
        )
        parser.add_argument(
            "--min-items",
            type=int,
            default=MIN_ITEMS,
            help=f"the Alternative Annotator Test: the items an annotator needs to be tested (default {MIN_ITEMS})",
        )

    def handle(
        self,
        *args,
        pool: str,
        format: str,
        out: str | None,
        table: str | None,
        seed: int,
        human: str | None = None,
        epsilon: float = DEFAULT_EPSILON,
        alpha: float = DEFAULT_ALPHA,
        delta: float = DEFAULT_DELTA,
        q: float = ALT_TEST_Q,
        min_items: int = MIN_ITEMS,
        **options,
    ) -> None:
        try:
            pool_row = Pool.objects.get(name=pool)
        except Pool.DoesNotExist as error:
            raise CommandError(f"No pool named {pool!r}.") from error
        if table and table not in render.report_tables_for(format):
            choices = render.report_tables_for(format)
            raise CommandError(
                f"--format {format} has no table {table!r}"
                + (f"; choose one of {', '.join(choices)}." if choices else "; it only comes whole.")
            )
        try:
            report = report_build(
                pool=pool_row, examples_seed=seed, human_verdict=human, epsilon=epsilon, alpha=alpha, delta=delta,
                q=q, min_items=min_items,
            )  # fmt: skip
        except AggregationError as error:
            raise CommandError(f"--human {human}: {error}.") from None
        except ValueError as error:  # an unknown verdict (call_command skips the parser's choices), or a parameter
            raise CommandError(str(error)) from None
        target = Path(out) if out else None
        if format == "csv" and target is not None and target.is_dir() and not table:
            for name in CSV_TABLES:
                (target / f"{name}.csv").write_text(report_csv(report=report, table=name), encoding="utf-8")
            self.stderr.write(f"Wrote {len(CSV_TABLES)} CSV files to {target}")
            return
        body = render.report_render(report=report, fmt=format, table=table).body
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
