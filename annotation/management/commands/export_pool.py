from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.selectors.pool_items import pool_items_write


class Command(BaseCommand):
    help = (
        "Write a pool's items as CSV, one row per item: item, model, dataset, setting, pronoun, sample, context, "
        "generation, heuristic (1, 0 or empty where no pronoun was stated) and kind (study, gold or training). "
        "Every cell is safe to open in a spreadsheet; the file imports again with import_generations."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--out", required=True, type=Path, help="PATH.csv")

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        out: Path = options["out"]
        try:
            with out.open("w", encoding="utf-8", newline="") as handle:
                count = pool_items_write(pool=pool, handle=handle)
        except OSError as exc:
            raise CommandError(f"{out}: cannot be written ({exc.strerror or exc})") from None
        self.stdout.write(f"pool {pool.name}: {count} items written to {out}")
