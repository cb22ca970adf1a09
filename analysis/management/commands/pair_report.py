"""python manage.py pair_report [--dimensions-pool P] [--datasets A,B] [--method M] [--format json|csv|latex]
[--out F]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.report.exports.pairs import pair_report_render
from analysis.selectors.pairs import PairReportError, pair_report
from annotation.models import Pool
from generation.models.pairs import PAIR_METHOD_CHOICES


class Command(BaseCommand):
    help = (
        "Write the stereotype pair report: each model's bias score per benchmark (bias), the benchmarks' agreement "
        "over models (agreement: overall, balanced, by_dimension, each rho, p_value, n_models) and, with "
        "--dimensions-pool, each benchmark's mix of stereotype dimensions from that pool's human labels."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dimensions-pool", help="the pair pool whose human labels give each pair's dimension")
        parser.add_argument(
            "--datasets", help="the two benchmarks to compare, A,B (default: every dataset of pairs with scores)"
        )
        parser.add_argument(
            "--method", choices=[value for value, _ in PAIR_METHOD_CHOICES], help="only scores of this method"
        )
        parser.add_argument("--format", choices=["json", "csv", "latex"], default="json")
        parser.add_argument("--out", type=Path, help="the file to write (default: stdout)")

    def handle(self, *args, **options) -> None:
        pool = None
        if options["dimensions_pool"]:
            pool = Pool.objects.filter(name=options["dimensions_pool"]).first()
            if pool is None:
                raise CommandError(f"no pool {options['dimensions_pool']!r}")
        datasets = [name.strip() for name in (options["datasets"] or "").split(",") if name.strip()] or None
        try:
            report = pair_report(datasets=datasets, dimensions_pool=pool, method=options["method"])
        except PairReportError as exc:
            raise CommandError(str(exc)) from None
        text = pair_report_render(report, options["format"])
        if options["out"] is None:
            self.stdout.write(text, ending="")
            return
        options["out"].write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote the pair report ({options['format']}) to {options['out']}")
