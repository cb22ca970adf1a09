from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from annotation.services.assignment import AssignmentError, assignments_create


class Command(BaseCommand):
    help = "Assign a pool's items to annotators: one each, --overlap items to two. Safe to re-run."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--annotators", required=True, help="comma-separated usernames")
        parser.add_argument("--overlap", type=int, default=0, help="items that get two annotators (paper: 200)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            result = assignments_create(
                pool=pool, usernames=options["annotators"].split(","), overlap=options["overlap"], seed=options["seed"]
            )
        except AssignmentError as exc:
            raise CommandError(str(exc)) from None
        loads = ", ".join(f"{name} {count}" for name, count in sorted(result.per_annotator.items()))
        self.stdout.write(
            f"pool {pool.name}: {result.created} new assignments, {result.overlap_items} items with two annotators; "
            f"workloads: {loads}"
        )
