"""python manage.py import_study STUDY.zip --pool NEWNAME [--accept-differences]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.projects import project_argument_add, project_option
from analysis.study.load import BundleError, study_bundle_read, study_import


class Command(BaseCommand):
    help = (
        "Import a study bundle as a new pool and keep it, so that another lab continues the study (adds annotators "
        "or judges). The bundle is verified first, as verify_study does (in a database of its own): one whose "
        "report does not follow from its data is refused, naming the figures that differ, unless "
        "--accept-differences. People come in as users named by their pseudonyms, without passwords. All or "
        'nothing: a bad bundle ends in "rejected: FILE:LINE: what" and nothing is written.'
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("bundle", help="the study bundle (zip)")
        parser.add_argument("--pool", help="the new pool's name, a slug (default: the bundle's)")
        parser.add_argument(
            "--accept-differences",
            action="store_true",
            help="import even when the recomputed report differs from the bundled one",
        )
        project_argument_add(parser)

    def handle(self, *args, **options) -> None:
        try:
            imported = study_import(
                bundle=study_bundle_read(options["bundle"]),
                pool_name=options["pool"],
                accept_differences=options["accept_differences"],
                project=project_option(options),
            )
        except BundleError as exc:
            raise CommandError(f"rejected: {exc}") from None
        self.stdout.write(json.dumps({"pool": imported.pool.name, "rows": imported.rows}))
