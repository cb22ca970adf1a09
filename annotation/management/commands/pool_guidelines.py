import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.services.guidelines import GuidelineError, pool_guidelines_set


class Command(BaseCommand):
    help = (
        "Set a pool's guidelines from a Markdown file: a new version (1, 2, ...); earlier ones stay readable. "
        'Prints {"pool": NAME, "version": N}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--file", required=True, help="the guidelines, Markdown (UTF-8)")

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            text = Path(options["file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        try:
            guideline = pool_guidelines_set(pool=pool, text=text)
        except GuidelineError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps({"pool": pool.name, "version": guideline.version}))
