import json
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from generation.models import DEFAULT_MODEL_NAME, JOB_DEFAULTS, GenerationJob
from generation.services.jobs import ACTIVE, JobParameterError, job_create, job_progress_refresh, job_run

POLL_SECONDS = 2.0


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class Command(BaseCommand):
    help = (
        "Queue a generation job (probability scoring + sampling). With --wait, follow it to the end; with no broker "
        "configured it always runs here, in the foreground. The last line printed is a JSON summary."
    )

    def add_base_argument(self, parser, *args, **kwargs):
        # Our --settings names evaluation settings (pre, post), not a Django settings module (use the env var).
        if "--settings" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser):
        parser.set_defaults(settings=None)  # read by Django's handle_default_options
        parser.add_argument("--model", default=DEFAULT_MODEL_NAME, help="registered model name")
        parser.add_argument("--dataset", required=True, help="dataset name (misgendered, ruff, demo-ruff, ...)")
        parser.add_argument("--pronouns", type=_csv, default=None, help="comma separated base pronouns (default all)")
        parser.add_argument(
            "--settings",
            "--contexts",
            dest="contexts",
            type=_csv,
            default=None,
            help="generation settings: pre,post or one of them (default both); TANGO datasets have open only",
        )
        parser.add_argument("--per-pronoun", type=int, default=None, help="first N instances per base pronoun")
        parser.add_argument("--samples", type=int, default=JOB_DEFAULTS.samples)
        parser.add_argument("--max-new-tokens", type=int, default=JOB_DEFAULTS.max_new_tokens)
        parser.add_argument("--top-k", type=int, default=JOB_DEFAULTS.top_k)
        parser.add_argument("--top-p", type=float, default=JOB_DEFAULTS.top_p)
        parser.add_argument("--num-beams", type=int, default=JOB_DEFAULTS.num_beams)
        parser.add_argument("--seed", type=int, default=JOB_DEFAULTS.seed)
        parser.add_argument("--wait", action="store_true", help="follow the job until it ends, with a progress bar")

    def handle(self, *args, **options):
        embedded = settings.CELERY_TASK_ALWAYS_EAGER
        try:
            job = job_create(
                model=options["model"],
                dataset=options["dataset"],
                pronouns=options["pronouns"],
                settings=options["contexts"],
                samples=options["samples"],
                max_new_tokens=options["max_new_tokens"],
                top_k=options["top_k"],
                top_p=options["top_p"],
                num_beams=options["num_beams"],
                seed=options["seed"],
                per_pronoun=options["per_pronoun"],
                queue=not embedded,
            )
        except JobParameterError as exc:
            raise CommandError(f"bad job parameters: {exc}") from None
        self.stderr.write(
            f"job {job.pk}: {job.total_instances} instances, {job.total_generations} generations "
            f"({job.model.name} on {job.dataset.name})"
        )
        if embedded:
            if not options["wait"]:
                self.stderr.write("no broker configured (CELERY_BROKER_URL unset): running the job here")
            job = self._run_here(job)
        elif options["wait"]:
            job = self._follow(job)
        self.stdout.write(
            json.dumps(
                {
                    "job": job.pk,
                    "status": job.status,
                    "instances": job.total_instances,
                    "generations": job.done_generations,
                }
            )
        )
        if job.status == "failed":
            raise CommandError(f"job {job.pk} failed:\n{job.error.strip()}")

    def _bar(self, job: GenerationJob) -> tqdm:
        return job_progress_bar(job)

    def _run_here(self, job: GenerationJob) -> GenerationJob:
        return job_run_with_bar(job)

    def _follow(self, job: GenerationJob) -> GenerationJob:
        return job_follow_with_bar(job)


def job_progress_bar(job: GenerationJob) -> tqdm:
    """A progress bar on stderr with elapsed time and the estimate of the time left (tqdm's `[elapsed<left]`);
    generations already written (a resumed job) are its starting point, so the estimate counts new work only."""
    return tqdm(
        total=job.total_generations,
        initial=job.done_generations,
        unit="gen",
        desc=f"job {job.pk}",
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0,  # the services call back once per written step, a few times a second at most
    )


def job_run_with_bar(job: GenerationJob) -> GenerationJob:
    """Run the job here (the embedded default), the bar moving after every written step."""
    with job_progress_bar(job) as bar:

        def progress(current: GenerationJob) -> None:
            bar.update(current.done_generations - bar.n)

        job = job_run(job_id=job.pk, progress=progress)
        bar.update(job.done_generations - bar.n)
    return job


def job_follow_with_bar(job: GenerationJob) -> GenerationJob:
    """Follow a job that Celery workers run, polling its row."""
    with job_progress_bar(job) as bar:
        while True:
            job = job_progress_refresh(job_id=job.pk)
            bar.update(job.done_generations - bar.n)
            if job.status not in ACTIVE:
                return job
            time.sleep(POLL_SECONDS)
