from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.services.export import ExportError, annotations_export_to_file


class Command(BaseCommand):
    help = (
        "Export every annotation of a pool, one row each, with its item, the adjudicated values and the heuristic "
        "verdict: --out PATH.csv or PATH.jsonl."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--out", required=True, help="PATH.csv or PATH.jsonl")

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        out = Path(options["out"])
        try:
            count = annotations_export_to_file(pool=pool, out=out)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{out}: cannot be written ({exc.strerror or exc})") from None
        self.stdout.write(f"pool {pool.name}: {count} annotations written to {out}")
