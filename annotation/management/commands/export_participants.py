from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.selectors.participants import participants_csv


class Command(BaseCommand):
    help = (
        "Write a pool's study participants as CSV, for payment and approval on the platform: one row per participant "
        "with the platform's participant, study and session ids, the pseudonym, started_at, finished_at, items, "
        "seconds, gold_accuracy, qualification and code_shown. The only output that holds the platform's ids."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--out", required=True, help="the CSV file to write")

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        if not hasattr(pool, "recruitment"):
            raise CommandError(f"pool {pool.name!r} has no recruitment (manage.py pool_recruit opens one)")
        text = participants_csv(pool=pool)
        out = Path(options["out"])
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"{out}: cannot write: {exc.strerror}") from None
        self.stdout.write(f"{out}: {text.count(chr(10)) - 1} participants of pool {pool.name}")
