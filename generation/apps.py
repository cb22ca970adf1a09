from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # CONCORD_ENGINE (config/settings.py) names an engine of the registry, or no process starts.
        from django.core.exceptions import ImproperlyConfigured

        from generation.engines import EngineUnavailable, worker_engine

        try:
            worker_engine()
        except EngineUnavailable as exc:
            raise ImproperlyConfigured(f"{exc}.") from exc

        # The generation kind goes through the same registry as the kinds other apps add (generation/jobs/kinds.py).
        from generation.jobs.generation_kind import GenerationKind
        from generation.jobs.kinds import job_kind_register
        from generation.models import GENERATION_KIND

        job_kind_register(GENERATION_KIND, GenerationKind())
