import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from generation.jobs.cli import job_follow_with_bar, job_run_with_bar
from generation.jobs.runner import chunks_requeue_stale
from generation.jobs.services import JobDispatchError, JobStateError, job_resume, jobs_unfinished, uploads_resume
from generation.models import Job


class Command(BaseCommand):
    help = (
        "Resume jobs that did not finish: failed ones, and those left queued or running by a runner that "
        "is gone (a killed worker or web server); a cancelled job is never resumed. Rows already written are kept "
        "and none is duplicated. Without a "
        "broker the jobs run here, in the foreground; with one they are queued for the workers (--wait follows "
        "them). Imports into pools left unfinished the same way are resumed after the jobs. The last line printed is "
        '{"resumed": [{"job", "status", "generations"}, ...], "imports": [{"import", "status", "rows_written"}, ...]}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--job", type=int, default=None, help="resume this job only (never a cancelled one)")
        parser.add_argument("--wait", action="store_true", help="with a broker, follow the jobs until they end")

    def handle(self, *args, job: int | None, wait: bool, **options):
        embedded = settings.CELERY_TASK_ALWAYS_EAGER
        job_ids = [job] if job is not None else jobs_unfinished(include_failed=True)
        if not job_ids:
            self.stderr.write("no unfinished generation jobs")
        if not embedded:
            chunks_requeue_stale()
        results = []
        for job_id in job_ids:
            try:
                resumed = job_resume(job_id=job_id, queue=not embedded)
            except JobStateError as exc:
                raise CommandError(f"--job: {exc}") from None
            except JobDispatchError as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(f"job {resumed.pk}: resumed at {resumed.done_items} of {resumed.total_items} generations")
            if resumed.status != "done":
                if embedded:
                    resumed = job_run_with_bar(resumed)
                elif wait:
                    resumed = job_follow_with_bar(resumed)
            results.append(self._summary(resumed))
        imports = self._imports(foreground=embedded) if job is None else []
        self.stdout.write(json.dumps({"resumed": results, "imports": imports}))
        failed = [result["job"] for result in results if result["status"] == "failed"]
        if failed:
            raise CommandError(f"jobs {', '.join(map(str, failed))} failed again; see their error on the job page")

    def _imports(self, *, foreground: bool) -> list[dict]:
        """The uploads' imports left queued, or running by a runner that is gone (the kinds the jobs page does not
        list), run again: here, to their end (`foreground`, no broker), or queued for the workers."""
        resumed: list[dict] = []
        for entry in uploads_resume(foreground=foreground):
            self.stderr.write(f"import {entry['import']}: resumed, {entry['status']}")
            resumed.append(entry)
        return resumed

    def _summary(self, job: Job) -> dict:
        return {"job": job.pk, "status": job.status, "generations": job.done_items}
