from django.apps import AppConfig


def _imports_restart(sender, *, started_before, **kwargs) -> list[int]:
    from annotation.services.imports.jobs import imports_resume_on_start

    return imports_resume_on_start(started_before=started_before)


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from generation.signals import resuming_on_start

        # The embedded default restarts the imports a stopped process left unfinished, as it resumes generation jobs.
        resuming_on_start.connect(_imports_restart, dispatch_uid="annotation-imports-restart")
