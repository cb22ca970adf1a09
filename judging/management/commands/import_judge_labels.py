import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.services.label_files import LabelImportError
from generation.textfiles import UnreadableFile, read_utf8
from judging.services.imports import judge_labels_import


class Command(BaseCommand):
    help = (
        "Import an external judge's labels (an API model's, made elsewhere) into a pool: item, label, and optionally "
        "prob_<label> for every label of the pool (summing to 1) or confidence. Creates or reuses the external judge "
        "(recorded, never run) and one judge run with origin `imported`. The last line printed is "
        '{"run": ID, "labels": N}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--pool", required=True)
        parser.add_argument("--judge", required=True, help="the external judge's name")
        parser.add_argument("--model-id", default="", help="the API model's id, e.g. gpt-4o")
        parser.add_argument("--description", default="", help="what the judge is, in your words")
        parser.add_argument("--prompt-file", type=Path, default=None, help="the prompt the judge was given (text)")
        parser.add_argument(
            "--extend-labels",
            action="store_true",
            help="add the file's labels outside the pool's set to it as categories (else they are refused)",
        )

    def handle(self, *args, **options):
        prompt = ""
        if options["prompt_file"] is not None:
            try:
                prompt = read_utf8(options["prompt_file"])[1]
            except UnreadableFile as exc:
                raise CommandError(str(exc)) from None
        try:
            run, plan = judge_labels_import(
                source=Path(options["file"]), pool_name=options["pool"], judge=options["judge"],
                model_id=options["model_id"], description=options["description"], prompt=prompt,
                extend_labels=options["extend_labels"],
            )  # fmt: skip
        except LabelImportError as exc:
            raise CommandError(str(exc)) from None
        summary = plan.summary()
        if plan.unchanged:
            self.stdout.write(f"run {run.pk}: these labels were imported before for {run.judge}; nothing changed")
            self.stdout.write(json.dumps({"run": run.pk, "labels": summary["labels"], "unchanged": True}))
            return
        if plan.new_labels:
            self.stdout.write(f"pool {plan.pool.name}: new label(s) {', '.join(plan.new_labels)}")
        self.stdout.write(
            f"run {run.pk}: {run.judge} on pool {plan.pool.name}, {summary['labels']} labels "
            f"({summary['with_probabilities']} with probabilities, {summary['with_confidence']} with a confidence)"
        )
        self.stdout.write(json.dumps({"run": run.pk, "labels": summary["labels"]}))
