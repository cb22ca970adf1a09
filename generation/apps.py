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
        # Stereotype pairs scored by a model (docs/domain.md, 'Stereotype pair benchmarks').
        from generation.jobs.pair_kind import PAIR_SCORE_KIND, PairScoreKind

        job_kind_register(PAIR_SCORE_KIND, PairScoreKind())

        # Templates datasets uploaded in the background (generation/jobs/dataset_import_kind.py).
        from generation.jobs.dataset_import_kind import DATASET_IMPORT_KIND, DatasetImportKind

        job_kind_register(DATASET_IMPORT_KIND, DatasetImportKind())
