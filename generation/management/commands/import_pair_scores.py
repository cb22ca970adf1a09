import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.services.pair_scores import PairScoresError, pair_scores_import


class Command(BaseCommand):
    help = (
        "Import stereotype pair scores computed elsewhere: a CSV with model, dataset, pair, score_stereotypical, "
        "score_anti_stereotypical (log-probabilities; optional method, default imported). Checked whole first; "
        "all or nothing; the same rows again change nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--json", action="store_true", help="end with a JSON summary line")

    def handle(self, *args, file: Path, **options):
        try:
            result = pair_scores_import(path=file)
        except PairScoresError as exc:
            raise CommandError(f"import failed, nothing written:\n{exc}") from None
        self.stdout.write(f"{result.rows} scores read: {result.created} new, {result.unchanged} already stored")
        if options["json"]:
            self.stdout.write(json.dumps({"rows": result.rows, "created": result.created}))
