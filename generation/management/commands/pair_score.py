import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from generation.jobs.cli import job_follow_with_bar, job_run_with_bar
from generation.jobs.pair_kind import PAIR_SCORE_KIND
from generation.jobs.services import JobDispatchError, JobParameterError, job_create
from generation.models import PAIR_METHODS


class Command(BaseCommand):
    help = (
        "Score both sentences of every pair of a dataset of stereotype pairs with a registered model, as a job: "
        "causal (a causal LM's summed token log-probability, BOS first), pll (a masked LM's pseudo-log-likelihood, "
        "CrowS-Pairs') or pll-word-l2r. With --wait, follow it to the end; with no broker it runs here. The last "
        "line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, help="a registered model")
        parser.add_argument(
            "--dataset", required=True, help="a dataset of pairs (import_dataset crows-pairs|stereoset)"
        )
        parser.add_argument("--method", choices=PAIR_METHODS, default=PAIR_METHODS[0])
        parser.add_argument("--batch-size", type=int, default=None, help="pairs per chunk (default: the model's)")
        parser.add_argument("--wait", action="store_true", help="follow the job until it ends, with a progress bar")

    def handle(self, *args, **options):
        embedded = settings.CELERY_TASK_ALWAYS_EAGER
        try:
            job = job_create(
                queue=not embedded,
                kind=PAIR_SCORE_KIND,
                model=options["model"],
                dataset=options["dataset"],
                batch_size=options["batch_size"],
                options={"method": options["method"]},
            )
        except JobParameterError as exc:
            raise CommandError(f"bad job parameters: {exc}") from None
        except JobDispatchError as exc:
            raise CommandError(f"{exc} Run `manage.py resume_jobs --job {exc.job_id}` once it is back.") from None
        self.stderr.write(f"job {job.pk}: {job.total_units} pairs of {options['dataset']} by {job.model.name}")
        if embedded:
            job = job_run_with_bar(job)
        elif options["wait"]:
            job = job_follow_with_bar(job)
        self.stdout.write(
            json.dumps({"job": job.pk, "status": job.status, "pairs": job.total_units, "scored": job.done_items})
        )
        if job.status == "failed":
            raise CommandError(f"job {job.pk} failed:\n{job.error.strip()}")
