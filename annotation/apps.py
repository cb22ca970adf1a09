from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.access import audit_hidden
        from annotation.services.imports.import_kind import POOL_IMPORT_KIND, PoolImportKind
        from common.audit import audit_hidden_register
        from generation.jobs.kinds import job_kind_register

        # The audit trail shows a researcher the entries of their projects' pools only (docs/domain.md, "Projects").
        audit_hidden_register(audit_hidden)

        # Imports into pools are jobs of their own kind (annotation/services/imports/import_kind.py).
        job_kind_register(POOL_IMPORT_KIND, PoolImportKind())
