import json

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Pool
from annotation.selectors import qualification_statuses
from annotation.services.qualification import (
    QualificationError,
    pass_mark_parse,
    pool_pass_mark_set,
    qualification_reset,
)


class Command(BaseCommand):
    help = (
        "Show a pool's qualification round (each annotator's training score), change its pass mark, or give an "
        "annotator who failed it a new training round. Prints "
        '{"pool": NAME, "pass_mark": X, "annotators": {USERNAME: {"status", "correct", "total", "score"}}}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--pass-mark", help="the share of training items to get right: 0.7 or 70%%")
        parser.add_argument(
            "--reset",
            action="append",
            default=[],
            metavar="ANNOTATOR",
            help="give this annotator (who failed) a new training round; repeat for several",
        )

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            with transaction.atomic():  # all or nothing: a refused reset leaves the pass mark as it was
                if options["pass_mark"] is not None:
                    pool_pass_mark_set(pool=pool, pass_mark=pass_mark_parse(options["pass_mark"]))
                for username in options["reset"]:
                    qualification_reset(pool=pool, username=username)
        except QualificationError as exc:
            raise CommandError(str(exc)) from None
        statuses = qualification_statuses(pool=pool)
        annotators = {
            name: {key: value for key, value in status.items() if key != "pass_mark"}
            for name, status in sorted(statuses.items())
        }
        self.stdout.write(json.dumps({"pool": pool.name, "pass_mark": pool.pass_mark, "annotators": annotators}))
