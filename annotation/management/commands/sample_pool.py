from django.core.management.base import BaseCommand, CommandError

from annotation.services import PoolSampleError, pool_sample


def _ids(value: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--jobs takes comma-separated job ids, not {value!r}") from None


class Command(BaseCommand):
    help = "Draw an annotation pool from finished generation jobs (DOMAIN section 4)."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--jobs", default="", help="comma-separated job ids (default: every finished job)")
        parser.add_argument("--per-cell", type=int, default=25)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--allow-short", action="store_true", help="keep cells with too few generations (they are reported)"
        )

    def handle(self, *args, **options):
        try:
            result = pool_sample(
                name=options["name"],
                job_ids=_ids(options["jobs"]) or None,
                per_cell=options["per_cell"],
                seed=options["seed"],
                allow_short=options["allow_short"],
            )
        except PoolSampleError as exc:
            raise CommandError(str(exc)) from None
        for cell in result.short:
            self.stderr.write(f"short cell: {cell}")
        self.stdout.write(f"pool {result.pool.name}: {result.items} items in {len(result.cells)} cells")
