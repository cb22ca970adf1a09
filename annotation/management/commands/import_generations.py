import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.labelset import SCALES
from annotation.models import GOLD, STUDY, TRAINING
from annotation.services import GenerationImportError, generations_import
from generation.datasets.files import ImportFailed
from generation.datasets.templates_files import codebook_read


class Command(BaseCommand):
    help = (
        "Import generations into a pool: free-text generations (CSV or JSON Lines: item, model, dataset, context, "
        "generation; optional pronoun, setting, sample, and template_id, name for a templates dataset) or the "
        "released sample format (CSV: template, random_pre_gen|random_post_gen, correct, pronoun, model), told "
        "apart by the header. --gold / --training import quality-control items, which also need gold_label (and "
        "optionally gold_extraneous, explanation; training items need an explanation)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--pool", required=True, help="pool name; created when it does not exist")
        kind = parser.add_mutually_exclusive_group()
        kind.add_argument("--gold", action="store_true", help="gold items: known answers hidden among the study items")
        kind.add_argument("--training", action="store_true", help="training items: the qualification round")
        parser.add_argument(
            "--labels",
            help="the pool's label set, comma separated (default: the pool's own, for a new pool correct, "
            "misgendering, no_pronoun)",
        )
        parser.add_argument(
            "--positive", default="", help="the label rates count, when the set has no misgendering (only for rates)"
        )
        parser.add_argument(
            "--scale",
            choices=SCALES,
            help="the labels' scale: nominal (categories; the default for a new pool), ordinal (in the order "
            "--labels gives them) or interval (numbers)",
        )
        parser.add_argument(
            "--positive-at-least",
            help="ordinal or interval pools: rates count every label at or above this one (instead of --positive)",
        )
        parser.add_argument(
            "--codebook",
            type=Path,
            help="free-text datasets' pronoun families (CSV: base, nom, acc, pos_dep, pos_ind, ref); default "
            "MISGENDERED's",
        )
        parser.add_argument(
            "--json", action="store_true", help="end with one JSON line: pool, items, heuristic_mismatches"
        )

    def handle(self, *args, **options):
        kind = GOLD if options["gold"] else TRAINING if options["training"] else STUDY
        labels = None
        if options["labels"] is not None:
            labels = [label.strip() for label in options["labels"].split(",") if label.strip()]
        try:
            codebook = codebook_read(options["codebook"]) if options["codebook"] is not None else None
        except ImportFailed as exc:
            raise CommandError(f"--codebook: {exc}") from None
        try:
            result = generations_import(
                paths=options["paths"],
                pool_name=options["pool"],
                kind=kind,
                labels=labels,
                positive=options["positive"].strip(),
                codebook=codebook,
                scale=options["scale"],
                positive_at_least=None
                if options["positive_at_least"] is None
                else options["positive_at_least"].strip(),
            )
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
