"""python manage.py gifi_report --model NAME [--format json|csv|latex] [--out F] [--sentiment ID] [--toxicity ID]
[--embedding ID] [--no-score] [--pool P ...]"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.gifi.exports import gifi_csv, gifi_latex
from analysis.gifi.report import gifi_corrected, gifi_report_build, gifi_sources
from analysis.gifi.scorers import SCORERS
from annotation.models import Pool
from generation.models import LanguageModel

FORMATS = {"json": lambda report: json.dumps(report, indent=2) + "\n", "csv": gifi_csv, "latex": gifi_latex}


class Command(BaseCommand):
    help = (
        "A model's GIFI report (docs/domain.md, 'GIFI'): GDR, SN, NTS, CF, SA, OF, PE, GIFI (x 100, over the scored "
        "dimensions), n per dimension, per-family accuracy for GDR and PE, and the comparison across models. Missing "
        "scores are computed with the scorers named (and stored); a scorer not installed leaves its dimension not "
        "scored, saying what to install."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--model", required=True, help="the model's registered name")
        parser.add_argument("--format", choices=list(FORMATS), default="json")
        parser.add_argument("--out", type=Path, help="file to write (default: stdout)")
        for scorer, spec in SCORERS.items():
            parser.add_argument(
                f"--{scorer}",
                help=f"the {scorer} scorer: a Hugging Face model id or a local directory (default {spec.default})",
            )
        parser.add_argument("--no-score", action="store_true", help="read stored scores only; run no scorer")
        parser.add_argument(
            "--pool",
            action="append",
            default=[],
            help="a people-checked pool (gifi_pool): its corrected dimensions of the model (JSON key `corrected`; "
            "CSV and LaTeX: a line on stderr each); repeatable",
        )

    def handle(self, *args, **options) -> None:
        model = LanguageModel.objects.filter(name=options["model"]).first()
        if model is None:
            raise CommandError(f"no model {options['model']!r}")
        pools = []
        for name in options["pool"]:
            pool = Pool.objects.filter(name=name).first()
            if pool is None:
                raise CommandError(f"--pool: no pool {name!r}")
            pools.append(pool)
        sources = gifi_sources(**{scorer: options[scorer] for scorer in SCORERS})
        report = gifi_report_build(model=model, sources=sources, score=not options["no_score"])
        if pools:
            report["corrected"] = gifi_corrected(model=model, pools=pools)
            if options["format"] != "json":
                for row in report["corrected"]:
                    self.stderr.write(_corrected_line(row))
        text = FORMATS[options["format"]](report)
        if options["out"] is not None:
            options["out"].write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {options['out']}")
        else:
            self.stdout.write(text, ending="")


def _corrected_line(row: dict) -> str:
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    family = "" if row["pronoun"] == "all" else f" ({row['pronoun']})"
    return (
        f"pool {row['pool']}: {row['dimension']}{family} corrected by people {shown(row['ppi'])} "
        f"(scorer {shown(row['detector'])}; n {row['n']} labelled, N {row['N']} unlabelled)"
    )
