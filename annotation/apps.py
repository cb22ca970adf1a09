from django.apps import AppConfig


def _job_pools_changed(sender, *, job_ids: list[int], **kwargs) -> None:
    from annotation.services.stamp import job_pools_changed

    job_pools_changed(job_ids=job_ids)


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import audit_hidden
        from annotation.services.imports.import_kind import POOL_IMPORT_KIND, PoolImportKind
        from common.audit import audit_hidden_register
        from generation.jobs.kinds import job_kind_register
        from generation.signals import jobs_changed

        # The audit trail shows a researcher the entries of their projects' pools only (docs/domain.md, "Projects").
        audit_hidden_register(audit_hidden)

        # Imports into pools are jobs of their own kind (annotation/services/imports/import_kind.py).
        job_kind_register(POOL_IMPORT_KIND, PoolImportKind())
        # A pool's report reads its jobs' rows: their progress is a change of the pool (annotation/services/stamp.py).
        jobs_changed.connect(_job_pools_changed, dispatch_uid="annotation-job-pools-changed")
