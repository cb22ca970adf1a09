from django.apps import AppConfig


def _dataset_imports_restart(sender, *, started_before, **kwargs) -> list[int]:
    from generation.services.dataset_imports import dataset_imports_resume_on_start

    return dataset_imports_resume_on_start(started_before=started_before)


def _dataset_imports_sweep(sender, **kwargs) -> list[int]:
    from generation.services.dataset_imports import dataset_imports_requeue_stale

    return dataset_imports_requeue_stale()


def _dataset_imports_resume(sender, *, foreground: bool, **kwargs) -> list[dict]:
    from generation.services.dataset_imports import dataset_imports_resume

    return dataset_imports_resume(foreground=foreground)


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
        # Stereotype pairs scored by a model (docs/domain.md, 'Stereotype pair benchmarks').
        from generation.jobs.pair_kind import PAIR_SCORE_KIND, PairScoreKind

        job_kind_register(PAIR_SCORE_KIND, PairScoreKind())

        # Templates datasets uploaded in the background hold leases as chunks do: restarted with the embedded
        # default, taken over by the workers' sweeper and by `resume_jobs` when their runner is gone.
        from generation.signals import resuming_jobs, resuming_on_start, sweeping

        resuming_on_start.connect(_dataset_imports_restart, dispatch_uid="generation-dataset-imports-restart")
        sweeping.connect(_dataset_imports_sweep, dispatch_uid="generation-dataset-imports-sweep")
        resuming_jobs.connect(_dataset_imports_resume, dispatch_uid="generation-dataset-imports-resume")
