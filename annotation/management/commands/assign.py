from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.services.assignment import DEFAULT_RATERS, AssignmentError, assignments_create

NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five"}


class Command(BaseCommand):
    help = (
        "Assign a pool's items to annotators: study items one each, --overlap items to --raters different people, "
        "gold items to everyone (hidden among the rest), training items to everyone, first. Safe to re-run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--annotators", required=True, help="comma-separated usernames")
        parser.add_argument("--overlap", type=int, default=0, help="items that get several annotators (paper: 200)")
        parser.add_argument(
            "--raters", type=int, default=DEFAULT_RATERS, help=f"annotators per overlap item (default {DEFAULT_RATERS})"
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            result = assignments_create(
                pool=pool,
                usernames=options["annotators"].split(","),
                overlap=options["overlap"],
                raters=options["raters"],
                seed=options["seed"],
            )
        except AssignmentError as exc:
            raise CommandError(str(exc)) from None
        loads = ", ".join(f"{name} {count}" for name, count in sorted(result.per_annotator.items()))
        raters = NUMBERS.get(result.raters, str(result.raters))
        extras = "".join(
            f", {count} {kind} items for everyone"
            for kind, count in (("training", result.training_items), ("gold", result.gold_items))
            if count
        )
        self.stdout.write(
            f"pool {pool.name}: {result.created} new assignments, {result.overlap_items} items with {raters} annotators"
            f"{extras}; {result.reordered} open assignments reordered; workloads: {loads}"
        )
