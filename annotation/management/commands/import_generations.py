import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounts.projects import project_argument_add, project_option
from annotation.labelset import SCALES
from annotation.models import GOLD, STUDY, TRAINING
from annotation.services import GenerationImportError, generations_import
from annotation.services.imports.catalog import ImportFormat, import_format, import_formats
from annotation.services.preview import GENERATIONS, UploadOptionsError
from generation.datasets.files import ImportFailed
from generation.datasets.gifi import NAME as GIFI_FORMAT
from generation.datasets.gifi import PARTS as GIFI_PARTS
from generation.datasets.templates_files import codebook_read


class Command(BaseCommand):
    help = (
        "Import generations into a pool: free-text generations (CSV or JSON Lines: item, model, dataset, context, "
        "generation; optional pronoun, setting, sample, and template_id, name for a templates dataset) or the "
        "released sample format (CSV: template, random_pre_gen|random_post_gen, correct, pronoun, model), told "
        "apart by the header. --gold / --training import quality-control items, which also need gold_label (and "
        "optionally gold_extraneous, explanation; training items need an explanation). --format gifi imports GIFI's "
        "released generation files as a finished job of --model over --part of a GIFI dataset, without a pool."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--pool", help="pool name; created when it does not exist (not with --format gifi)")
        parser.add_argument(
            "--format",
            choices=[entry.name for entry in import_formats() if not entry.one_file],
            help="generations (the default: into --pool); gifi: GIFI's released generation files, as one finished "
            "job of --model over --part of a GIFI dataset (no pool)",
        )
        parser.add_argument("--part", choices=list(GIFI_PARTS), help="--format gifi: the part the file holds")
        parser.add_argument("--model", help="--format gifi: the model that wrote it (added when not registered)")
        parser.add_argument("--dataset", default=GIFI_FORMAT, help="--format gifi: the GIFI dataset (default gifi)")
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
        project_argument_add(parser, what="a new pool")
        parser.add_argument(
            "--json", action="store_true", help="end with one JSON line: pool, items, heuristic_mismatches"
        )

    def handle(self, *args, **options):
        entry = import_format(options["format"] or GENERATIONS)
        if not entry.into_pool:
            return self._job_format(entry, options)
        if not options["pool"]:
            raise CommandError(
                f"--pool is required (except with --format {', '.join(e.name for e in import_formats(into_pool=False))})"
            )
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
                project=project_option(options),
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

    def _job_format(self, entry: ImportFormat, options) -> None:
        """A format that imports into no pool (gifi: one finished job per file)."""
        name = entry.name
        if not options["part"] or not options["model"]:
            raise CommandError(f"--format {name} needs --part and --model")
        if options["pool"] or options["gold"] or options["training"] or options["labels"] or options["codebook"]:
            raise CommandError(
                f"--format {name} imports a job's generations: no --pool, --gold, --training, --labels or --codebook"
            )
        try:
            checked = entry.options_from(options)
        except UploadOptionsError as exc:
            raise CommandError(f"--{exc}") from None
        for path in options["paths"]:
            try:
                outcome = entry.run(None, [Path(path)], checked)
            except ImportFailed as exc:
                raise CommandError(f"import failed, nothing written:\n{exc}") from None
            for result in outcome.summary["results"]:
                verb = "imported" if result.created else "already imported, unchanged:"
                self.stdout.write(
                    f"{verb} {path}: job {result.job.pk} of {result.job.model.name}, {result.rows} generations "
                    f"({result.empty} empty) of {options['part']}"
                )
                if options["json"]:
                    self.stdout.write(json.dumps(result.as_json()))
