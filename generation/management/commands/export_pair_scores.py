from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.models import Dataset
from generation.models.pairs import PAIR_METHOD_CHOICES
from generation.services.pair_scores import pair_scores_export


class Command(BaseCommand):
    help = (
        "Write a model's scores of a dataset of stereotype pairs as CSV: pair, dataset, stereotypical, "
        "anti_stereotypical, score_stereotypical, score_anti_stereotypical."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True, help="the model's name (a registered model, or an imported one)")
        parser.add_argument(
            "--method", choices=[value for value, _ in PAIR_METHOD_CHOICES], help="needed when it has several"
        )
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        try:
            written = pair_scores_export(
                dataset=dataset, model=options["model"], method=options["method"], out=options["out"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {written} pairs to {options['out']}")
