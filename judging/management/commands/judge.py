import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from generation.jobs.cli import job_follow_with_bar, job_run_with_bar
from generation.jobs.services import JobParameterError
from generation.selectors import job_spent
from judging.models import JudgeRun
from judging.services.runs import judge_run_create


class Command(BaseCommand):
    help = (
        "Run an LLM judge over a pool's items (--pool) or over every generation of a finished generation job (--job; "
        "the run then counts for every pool drawn from that job), as a job. A finished run with the same judge version and parameters is "
        "not run again unless --rerun. With --wait, follow it to the end; with no broker configured it always runs "
        "here. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", default=None, help="pool name")
        parser.add_argument("--job", type=int, default=None, help="a finished generation job's id (instead of --pool)")
        parser.add_argument("--judge", required=True, help="judge name (its latest version)")
        parser.add_argument("--mode", default=None, help="likelihood or sampling (default: the judge's)")
        parser.add_argument("--k", type=int, default=None, help="samples per item in sampling mode (default 5)")
        parser.add_argument("--temperature", type=float, default=None, help="sampling temperature (default 0.7)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--rerun", action="store_true", help="run again even when an equal run finished")
        parser.add_argument("--wait", action="store_true", help="follow the run until it ends")
        parser.add_argument(
            "--check",
            default=None,
            choices=["position", "family-swap", "contextual"],
            help="run a check of the judge over the pool instead (position consistency, family-swap invariance, "
            "contextual calibration); its labels are not the pool's machine labels",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="check the run and print what it would send (requests, tokens, cost); create nothing",
        )

    def handle(self, *args, **options):
        embedded = settings.CELERY_TASK_ALWAYS_EAGER
        if options["dry_run"]:
            return self._dry_run(options)
        if options["check"]:
            return self._check(options, embedded=embedded)
        try:
            run, created = judge_run_create(
                pool=options["pool"],
                job=options["job"],
                judge=options["judge"],
                mode=options["mode"],
                k=options["k"],
                temperature=options["temperature"],
                seed=options["seed"],
                rerun=options["rerun"],
                queue=not embedded,
            )
        except JobParameterError as exc:
            raise CommandError(f"bad judge run: {exc}") from None
        if not created and run.state == "done":
            self.stderr.write(
                f"run {run.pk} of {run.judge} on {run.scope} is finished; nothing to do (--rerun to redo)"
            )
        else:
            unit = "generations" if run.source_job_id is not None else "items"
            self.stderr.write(f"run {run.pk}: {run.judge} on {run.scope}, {run.total_items} {unit}, {run.mode}")
            if embedded:
                job_run_with_bar(run.job)  # no broker: the job runs here, in the foreground
            elif options["wait"]:
                job_follow_with_bar(run.job)
        run = JudgeRun.objects.select_related("judge", "job", "pool").get(pk=run.pk)
        self.stdout.write(
            json.dumps(
                {
                    "run": run.pk,
                    "judge": run.judge.name,
                    **({"pool": run.pool.name} if run.pool is not None else {"job": run.source_job_id}),
                    "version": run.judge.version,
                    "mode": run.mode,
                    "state": run.state,
                    "items": run.total_items,
                    "labels": run.labels.count(),
                    "created": created,
                    # Unparsed replies (docs/domain.md, 'Models behind an endpoint') and what the run's requests
                    # cost (none on local weights).
                    "n_unparsed": run.labels.filter(label="").count(),
                    **job_spent(job=run.job),
                }
            )
        )
        if run.state == "failed":
            raise CommandError(f"run {run.pk} failed:\n{run.job.error.strip()}")

    def _check(self, options, *, embedded: bool) -> None:
        from judging.checks import check_run_create
        from judging.models import CheckRun

        if options["job"] is not None:
            raise CommandError("bad check run: a check runs over a pool's items (--pool), not over a job")
        try:
            run, created = check_run_create(
                check=options["check"], pool=options["pool"] or "", judge=options["judge"], mode=options["mode"],
                k=options["k"], temperature=options["temperature"], seed=options["seed"], rerun=options["rerun"],
                queue=not embedded,
            )  # fmt: skip
        except JobParameterError as exc:
            raise CommandError(f"bad check run: {exc}") from None
        if not created and run.state == "done":
            self.stderr.write(f"check run {run.pk} ({run.kind} of {run.judge} on pool {run.pool}) is finished")
        else:
            self.stderr.write(f"check run {run.pk}: {run.kind} of {run.judge} on pool {run.pool}, {run.mode}")
            if embedded:
                job_run_with_bar(run.job)
            elif options["wait"]:
                job_follow_with_bar(run.job)
        run = CheckRun.objects.select_related("judge", "job", "pool").get(pk=run.pk)
        self.stdout.write(
            json.dumps(
                {
                    "run": run.pk, "check": run.kind, "judge": run.judge.name, "version": run.judge.version,
                    "pool": run.pool.name, "mode": run.mode, "state": run.state, "labels": run.labels.count(),
                    "created": created,
                }
            )
        )  # fmt: skip
        if run.state == "failed":
            raise CommandError(f"check run {run.pk} failed:\n{run.job.error.strip()}")

    def _dry_run(self, options) -> None:
        from judging.selectors import judge_run_estimate
        from judging.services.runs import judge_run_check

        try:
            params = judge_run_check(
                pool=options["pool"], job=options["job"], judge=options["judge"], mode=options["mode"],
                k=options["k"], temperature=options["temperature"], seed=options["seed"],
            )  # fmt: skip
        except JobParameterError as exc:
            raise CommandError(f"bad judge run: {exc}") from None
        estimate = judge_run_estimate(params=params)
        self.stderr.write(
            f"would send {estimate['requests']} requests, about {estimate['tokens_in']} tokens in and at most "
            f"{estimate['tokens_out']} out"
            + (f", about ${estimate['cost_usd']:.4f}" if estimate["cost_usd"] is not None else "")
        )
        self.stdout.write(json.dumps({"dry_run": True, **estimate}))
