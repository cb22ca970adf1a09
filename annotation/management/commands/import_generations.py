import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import GOLD, STUDY, TRAINING
from annotation.services import GenerationImportError, generations_import


class Command(BaseCommand):
    help = (
        "Import generations in the released sample format (CSV: template, random_pre_gen|random_post_gen, correct, "
        "pronoun, model). --gold / --training import quality-control items, which also need gold_label (and "
        "optionally gold_extraneous, explanation; training items need an explanation)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--pool", required=True, help="pool name; created when it does not exist")
        kind = parser.add_mutually_exclusive_group()
        kind.add_argument("--gold", action="store_true", help="gold items: known answers hidden among the study items")
        kind.add_argument("--training", action="store_true", help="training items: the qualification round")
        parser.add_argument(
            "--json", action="store_true", help="end with one JSON line: pool, items, heuristic_mismatches"
        )

    def handle(self, *args, **options):
        kind = GOLD if options["gold"] else TRAINING if options["training"] else STUDY
        try:
            result = generations_import(paths=options["paths"], pool_name=options["pool"], kind=kind)
        except GenerationImportError as exc:
            raise CommandError(str(exc)) from None
        what = "new items" if kind == STUDY else f"new {kind} items"
        self.stdout.write(
            f"pool {result.pool.name}: {result.rows} rows read, {result.items} {what}, "
            f"{result.rows - result.items} already imported, heuristic differs from the file on {result.heuristic_mismatches} rows"
        )
        if options["json"]:
            payload = {
                "pool": result.pool.name,
                "items": result.items,
                "heuristic_mismatches": result.heuristic_mismatches,
            }
            if kind != STUDY:
                payload["kind"] = kind
            self.stdout.write(json.dumps(payload))
