import json

from django.core.management.base import BaseCommand, CommandError

from annotation.services import GenerationImportError, generations_import


class Command(BaseCommand):
    help = "Import generations in the released sample format (CSV: template, random_pre_gen|random_post_gen, correct, pronoun, model)."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--pool", required=True, help="pool name; created when it does not exist")
        parser.add_argument(
            "--json", action="store_true", help="end with one JSON line: pool, items, heuristic_mismatches"
        )

    def handle(self, *args, **options):
        try:
            result = generations_import(paths=options["paths"], pool_name=options["pool"])
        except GenerationImportError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"pool {result.pool.name}: {result.rows} rows read, {result.items} new items, "
            f"{result.rows - result.items} already imported, heuristic differs from the file on {result.heuristic_mismatches} rows"
        )
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "pool": result.pool.name,
                        "items": result.items,
                        "heuristic_mismatches": result.heuristic_mismatches,
                    }
                )
            )
