"""python manage.py export_study --pool NAME --out STUDY.zip [--include-notes]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from analysis.study.export import study_export
from annotation.models import Pool


class Command(BaseCommand):
    help = (
        "Write a pool's study bundle (docs/domain.md, 'A study others can check'): manifest, generations, items, "
        "annotations, adjudications, machine labels (every judge run over the pool or one of its jobs) and the report, "
        "people as pseudonyms and server paths as file names. Notes stay out unless --include-notes. Prints a JSON "
        "summary."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--pool", required=True)
        parser.add_argument("--out", required=True, help="the zip archive to write")
        parser.add_argument(
            "--include-notes",
            action="store_true",
            help="write annotators' and adjudicators' notes word for word (the manifest then warns)",
        )

    def handle(self, *args, **options) -> None:
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            manifest = study_export(pool=pool, out=options["out"], notes=options["include_notes"])
        except OSError as exc:
            raise CommandError(f"cannot write {options['out']}: {exc}") from None
        rows = {name: entry["rows"] for name, entry in manifest["files"].items() if entry["rows"] is not None}
        summary = {"pool": pool.name, "out": options["out"], "figures": manifest["report"]["figures"], "rows": rows}
        self.stdout.write(json.dumps(summary))
