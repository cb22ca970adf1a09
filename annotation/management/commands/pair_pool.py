import json

from django.core.management.base import BaseCommand, CommandError

from accounts.projects import project_argument_add, project_option
from annotation.services.pair_pool import PairPoolError, pair_pool_create


class Command(BaseCommand):
    help = (
        "Make a pool of stereotype pairs for people to label: every pair of the datasets, in an order drawn with the "
        "seed, both sentences shown without the benchmark; labels: the four stereotype dimensions; flags: the "
        "pitfalls; guidelines: the dimension guideline (roles > attitudes > personality when in doubt)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--datasets", required=True, help="datasets of pairs, comma separated: A,B")
        parser.add_argument("--name", required=True, help="the new pool's name")
        parser.add_argument("--seed", type=int, default=0, help="seed of the items' order")
        project_argument_add(parser)
        parser.add_argument("--json", action="store_true", help="end with a JSON summary line")

    def handle(self, *args, **options):
        datasets = [name.strip() for name in options["datasets"].split(",") if name.strip()]
        try:
            result = pair_pool_create(
                datasets=datasets, name=options["name"], seed=options["seed"], project=project_option(options)
            )
        except PairPoolError as exc:
            raise CommandError(str(exc)) from None
        counts = ", ".join(f"{d} {n}" for d, n in result.per_dataset.items())
        self.stdout.write(f"pool {result.pool.name}: {result.items} pairs ({counts})")
        if options["json"]:
            self.stdout.write(json.dumps({"pool": result.pool.name, "items": result.items, **result.per_dataset}))
