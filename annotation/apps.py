from django.apps import AppConfig


def _imports_restart(sender, *, started_before, **kwargs) -> list[int]:
    from annotation.services.imports.jobs import imports_resume_on_start

    return imports_resume_on_start(started_before=started_before)


def _imports_sweep(sender, **kwargs) -> list[int]:
    from annotation.services.imports.jobs import imports_requeue_stale

    return imports_requeue_stale()


def _imports_resume(sender, *, foreground: bool, **kwargs) -> list[dict]:
    from annotation.services.imports.jobs import imports_resume

    return imports_resume(foreground=foreground)


def _job_pools_changed(sender, *, job_ids: list[int], **kwargs) -> None:
    from annotation.services.stamp import job_pools_changed

    job_pools_changed(job_ids=job_ids)


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import audit_hidden
        from common.audit import audit_hidden_register
        from generation.signals import jobs_changed, resuming_jobs, resuming_on_start, sweeping

        # The audit trail shows a researcher the entries of their projects' pools only (docs/domain.md, "Projects").
        audit_hidden_register(audit_hidden)

        # The embedded default restarts the imports a stopped process left unfinished, as it resumes generation jobs.
        resuming_on_start.connect(_imports_restart, dispatch_uid="annotation-imports-restart")
        # Imports hold leases as chunks do: the workers' sweeper and `resume_jobs` take over those whose runner is gone.
        sweeping.connect(_imports_sweep, dispatch_uid="annotation-imports-sweep")
        resuming_jobs.connect(_imports_resume, dispatch_uid="annotation-imports-resume")
        # A pool's report reads its jobs' rows: their progress is a change of the pool (annotation/services/stamp.py).
        jobs_changed.connect(_job_pools_changed, dispatch_uid="annotation-job-pools-changed")
