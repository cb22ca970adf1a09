from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.datasets.export import instances_export
from generation.models import Dataset


class Command(BaseCommand):
    help = (
        "Write a dataset's instances to CSV, one row per instance, streamed. RUFF datasets (with or without "
        "distractors) get RUFF's columns: uid, occupation, participant, word, pronoun_type, pronoun, "
        "confuse_pronoun, distractors, text. Templates datasets get template_id, group, base, name, form, "
        "pre_context, post_context, candidates (a JSON list, codebook order, capitalised as scored)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="the dataset's name")
        parser.add_argument("--out", required=True, type=Path, help="the CSV file to write")

    def handle(self, *args, dataset: str, out: Path, **options):
        row = Dataset.objects.filter(name=dataset).first()
        if row is None:
            known = ", ".join(Dataset.objects.values_list("name", flat=True)) or "none imported yet"
            raise CommandError(f"no dataset named {dataset!r} (datasets: {known})")
        try:
            written = instances_export(dataset=row, path=out)
        except OSError as exc:
            raise CommandError(f"{out}: cannot write ({exc.strerror or exc})") from None
        self.stdout.write(f"wrote {written} instances of {row.name} to {out}")
