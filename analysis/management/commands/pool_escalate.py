"""python manage.py pool_escalate --pool POOL --run RUN --name NEW [--alpha A] [--delta D]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.projects import ProjectError, project_choose
from analysis.selectors.verdict import DEFAULT_ALPHA, DEFAULT_DELTA
from analysis.services import EscalationError, pool_escalate
from annotation.models import Pool
from judging.models import JudgeRun


class Command(BaseCommand):
    help = (
        "Escalate to people what a judge abstains on: calibrate the selective threshold on POOL's human labels, then "
        "draw pool NEW from the run's job generations whose confidence is below it, leaving out POOL's items. NEW is "
        "ready to assign. When nothing passes the threshold, says so and makes no pool."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--pool", required=True, help="the annotated pool the threshold is calibrated on")
        parser.add_argument("--run", type=int, required=True, help="a finished judge run over the pool's job")
        parser.add_argument("--name", required=True, help="the new pool's name")
        parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help=f"default {DEFAULT_ALPHA}")
        parser.add_argument("--delta", type=float, default=DEFAULT_DELTA, help=f"default {DEFAULT_DELTA}")
        parser.add_argument(
            "--project", default=None, help="the project the new pool belongs to (default: POOL's project)"
        )

    def handle(self, *args, pool: str, run: int, name: str, alpha: float, delta: float, **options) -> None:
        pool_row = Pool.objects.filter(name=pool).first()
        if pool_row is None:
            raise CommandError(f"No pool named {pool!r}.")
        run_row = (
            JudgeRun.objects.select_related("judge", "job", "source_job__model", "source_job__generation_run__dataset")
            .filter(pk=run)
            .first()
        )
        if run_row is None:
            raise CommandError(f"No judge run {run}.")
        try:
            project = project_choose(name=options["project"]) if options.get("project") else None
        except ProjectError as exc:
            raise CommandError(f"--project: {exc}") from None
        try:
            result = pool_escalate(pool=pool_row, run=run_row, name=name, alpha=alpha, delta=delta, project=project)
        except EscalationError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(result.message)
