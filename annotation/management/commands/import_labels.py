import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import InterfaceError, OperationalError

from annotation.services.label_files import LabelImportError
from annotation.services.label_import import labels_import


class Command(BaseCommand):
    help = (
        "Import people's labels made elsewhere into a pool: long (item, annotator, label; optional created_at, "
        "seconds, extraneous, note) or --wide (item and one column per annotator). Annotators become pseudonymous "
        "accounts that cannot log in; labels have origin `imported`. The same file twice changes nothing; a label "
        "that contradicts a stored one is refused unless --replace; nothing is written when any line is refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--pool", required=True, help="the pool whose items the file labels")
        parser.add_argument("--wide", action="store_true", help="item and one column per annotator")
        parser.add_argument("--replace", action="store_true", help="overwrite stored labels the file contradicts")

    def handle(self, *args, **options):
        try:
            plan = labels_import(
                source=Path(options["file"]), pool_name=options["pool"], wide=options["wide"],
                replace=options["replace"],
            )  # fmt: skip
        except LabelImportError as exc:
            raise CommandError(str(exc)) from None
        except (OperationalError, InterfaceError) as exc:  # the server restarted, the session was ended
            # The import is one transaction: a lost connection rolled all of it back.
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            flags = "".join(f" --{flag}" for flag in ("wide", "replace") if options[flag])
            again = f"import_labels {options['file']} --pool {options['pool']}{flags}"
            raise CommandError(
                f"the database connection was lost ({first}); nothing was written: run `manage.py {again}` again"
            ) from None
        self.stdout.write(
            f"pool {plan.pool.name}: {len(plan.rows)} labels by {len(plan.annotators)} annotators: {plan.new} new, "
            f"{plan.replaced} replaced, {plan.completed} completed, {plan.unchanged} already there"
        )
        self.stdout.write(json.dumps(plan.summary()))
