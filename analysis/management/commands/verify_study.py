"""python manage.py verify_study STUDY.zip"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from analysis.study.load import BundleError, differences_text, study_verify


class Command(BaseCommand):
    help = (
        "Verify a study bundle: import it into a database of its own (a new, empty SQLite database in a temporary "
        "folder, whatever database this Concord runs on; never this server's), recompute its report and compare "
        'every figure with the bundled one. Prints {"figures": N, "equal": N, "differ": [...]}; exits 0 only when '
        "every figure is equal and every file has the manifest's SHA-256. The answer does not depend on where it "
        'runs. A bundle that cannot be read ends in "rejected: FILE:LINE: what".'
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("bundle", help="the study bundle (zip)")

    def handle(self, *args, **options) -> None:
        try:
            outcome = study_verify(source=options["bundle"])
        except BundleError as exc:
            raise CommandError(f"rejected: {exc}") from None
        printed = {
            "figures": outcome["figures"],
            "equal": outcome["equal"],
            "differ": [row["figure"] for row in outcome["differ"]],
        }
        if outcome["changed_files"]:
            printed["changed_files"] = outcome["changed_files"]
        self.stdout.write(json.dumps(printed))
        if outcome["differ"]:
            raise CommandError(differences_text(outcome))
        if outcome["changed_files"]:
            raise CommandError(
                f"every figure is equal, but {', '.join(outcome['changed_files'])} differ from the manifest's SHA-256"
            )
