"""python manage.py verify_study STUDY.zip"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from analysis.study.load import BundleError, study_verify


class Command(BaseCommand):
    help = (
        "Import a study bundle into this database, recompute its report and compare every figure with the bundled "
        'one (the import is rolled back). Prints {"figures": N, "equal": N, "differ": [...]}; exits 0 only when '
        "every figure is equal."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("bundle", help="the study bundle (zip)")

    def handle(self, *args, **options) -> None:
        try:
            outcome = study_verify(source=options["bundle"])
        except BundleError as exc:
            raise CommandError(f"rejected, nothing was written: {exc}") from None
        printed = {
            "figures": outcome["figures"],
            "equal": outcome["equal"],
            "differ": [row["figure"] for row in outcome["differ"]],
        }
        if outcome["changed_files"]:
            printed["changed_files"] = outcome["changed_files"]
        self.stdout.write(json.dumps(printed))
        if outcome["differ"]:
            shown = "; ".join(
                f"{row['figure']}: bundled {row['bundled']}, recomputed {row['recomputed']}"
                for row in outcome["differ"][:20]
            )
            more = len(outcome["differ"]) - 20
            raise CommandError(
                f"{len(outcome['differ'])} of {outcome['figures']} figures differ from the bundle: {shown}"
                + (f"; and {more} more" if more > 0 else "")
            )
        if outcome["changed_files"]:
            raise CommandError(
                f"every figure is equal, but {', '.join(outcome['changed_files'])} differ from the manifest's SHA-256"
            )
