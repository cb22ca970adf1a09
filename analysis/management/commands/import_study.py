"""python manage.py import_study STUDY.zip --pool NEWNAME"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from analysis.study.load import BundleError, study_bundle_read, study_import


class Command(BaseCommand):
    help = (
        "Import a study bundle as a new pool and keep it, so that another lab continues the study (adds annotators "
        "or judges). People come in as users named by their pseudonyms, without passwords. All or nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("bundle", help="the study bundle (zip)")
        parser.add_argument("--pool", help="the new pool's name (default: the bundle's)")

    def handle(self, *args, **options) -> None:
        try:
            imported = study_import(bundle=study_bundle_read(options["bundle"]), pool_name=options["pool"])
        except BundleError as exc:
            raise CommandError(f"rejected, nothing was written: {exc}") from None
        self.stdout.write(json.dumps({"pool": imported.pool.name, "rows": imported.rows}))
