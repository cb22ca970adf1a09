from django.core.management.base import BaseCommand, CommandError

from accounts.projects import project_argument_add, project_option
from annotation.labelset import SCALES
from annotation.models import NOMINAL
from annotation.services import PoolSampleError, pool_sample
from annotation.services.pool import DRAW_INSTANCES, DRAWS, POOL_SEED


def _ids(value: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--jobs takes comma-separated job ids, not {value!r}") from None


def _label_set(options) -> dict:
    labels = options["labels"]
    return {
        "labels": None if labels is None else [label.strip() for label in labels.split(",") if label.strip()],
        "scale": options["scale"],
        "positive": options["positive"].strip(),
        "positive_at_least": options["positive_at_least"].strip(),
    }


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
        parser.add_argument(
            "--active",
            action="store_true",
            help="an active draw (docs/domain.md, 'Spending people's labels where they count'): contexts the judge is "
            "unsure about are drawn more often; needs --jobs JOB, --judge-run and --budget",
        )
        parser.add_argument("--judge-run", type=int, help="--active: a finished judge run over the job")
        parser.add_argument("--budget", type=float, help="--active: the expected number of contexts people label")
        # The label set, as import_generations declares it (docs/domain.md, "Scales").
        parser.add_argument(
            "--labels",
            help="the pool's label set, comma separated, as written (default correct,misgendering,no_pronoun)",
        )
        parser.add_argument(
            "--positive", default="", help="the label rates count, when the set has no misgendering (only for rates)"
        )
        parser.add_argument(
            "--scale",
            choices=SCALES,
            default=NOMINAL,
            help="the labels' scale: nominal (categories, the default), ordinal (in the order --labels gives them) or "
            "interval (numbers)",
        )
        parser.add_argument(
            "--positive-at-least",
            default="",
            help="ordinal or interval pools: rates count every label at or above this one (instead of --positive)",
        )
        project_argument_add(parser)

    def handle(self, *args, **options):
        if options["active"]:
            self._active(options)
            return
        if options["judge_run"] is not None or options["budget"] is not None:
            raise CommandError("--judge-run and --budget belong to an active draw: add --active")
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
                project=project_option(options),
                **_label_set(options),
            )
        except PoolSampleError as exc:
            raise CommandError(str(exc)) from None
        for cell in result.short:
            self.stderr.write(f"short cell: {cell}")
        assert result.pool is not None  # pool_sample returns the pool it wrote, or raises
        self.stdout.write(f"pool {result.pool.name}: {result.items} items in {len(result.cells)} cells")

    def _active(self, options) -> None:
        foreign = options["instances"] is not None or options["per_cell"] is not None or options["allow_short"]
        if foreign or options["draw"] != DRAW_INSTANCES:
            raise CommandError(
                "--active draws by the judge's probabilities: --draw, --instances, --per-cell and --allow-short "
                "do not apply"
            )
        if options["judge_run"] is None or options["budget"] is None:
            raise CommandError("--active needs --judge-run RUN and --budget B")
        jobs = _ids(options["jobs"])
        if len(jobs) != 1:
            raise CommandError("--active draws from one job: pass --jobs JOB, the job the judge run covers")
        try:
            result = pool_sample(
                name=options["name"], job_ids=jobs, seed=options["seed"], active=True,
                judge_run=options["judge_run"], budget=options["budget"], project=project_option(options),
                **_label_set(options),
            )  # fmt: skip
        except PoolSampleError as exc:
            raise CommandError(str(exc)) from None
        assert result.pool is not None
        contexts = result.pool.items.values("generation__instance_id", "setting").distinct().count()
        self.stdout.write(
            f"pool {result.pool.name}: {result.items} items in {contexts} contexts drawn with judge run "
            f"{options['judge_run']} at budget {options['budget']:g} (seed {options['seed']})"
        )
