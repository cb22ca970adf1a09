from django.core.management.base import BaseCommand, CommandError

from annotation.services import PoolSampleError, pool_sample
from annotation.services.pool import DRAW_INSTANCES, DRAWS, POOL_SEED


def _ids(value: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--jobs takes comma-separated job ids, not {value!r}") from None


class Command(BaseCommand):
    help = (
        "Draw an annotation pool from finished generation jobs (docs/domain.md, 'The annotation pool'): per model x "
        "dataset x setting x pronoun, --instances random instances with all their samples (5 x 5 = 25)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--jobs", default="", help="comma-separated job ids (default: every finished job)")
        parser.add_argument(
            "--draw",
            choices=DRAWS,
            default=DRAW_INSTANCES,
            help="instances: whole instances with all their samples (the paper's, default); "
            "per-sample-index: --per-cell / samples instances drawn separately per sample index",
        )
        parser.add_argument("--instances", type=int, help="instances per cell (--draw instances; default 5)")
        parser.add_argument("--per-cell", type=int, help="generations per cell (--draw per-sample-index; default 25)")
        parser.add_argument("--seed", type=int, default=POOL_SEED, help=f"default {POOL_SEED}, the paper's draw")
        parser.add_argument(
            "--allow-short", action="store_true", help="keep cells with too few generations (they are reported)"
        )

    def handle(self, *args, **options):
        if options["draw"] == DRAW_INSTANCES and options["per_cell"] is not None:
            raise CommandError("--per-cell belongs to --draw per-sample-index; the default draw takes --instances")
        if options["draw"] != DRAW_INSTANCES and options["instances"] is not None:
            raise CommandError("--instances belongs to --draw instances; --draw per-sample-index takes --per-cell")
        try:
            result = pool_sample(
                name=options["name"],
                job_ids=_ids(options["jobs"]) or None,
                draw=options["draw"],
                instances=options["instances"] or 5,
                per_cell=options["per_cell"] or 25,
                seed=options["seed"],
                allow_short=options["allow_short"],
            )
        except PoolSampleError as exc:
            raise CommandError(str(exc)) from None
        for cell in result.short:
            self.stderr.write(f"short cell: {cell}")
        assert result.pool is not None  # pool_sample returns the pool it wrote, or raises
        self.stdout.write(f"pool {result.pool.name}: {result.items} items in {len(result.cells)} cells")
