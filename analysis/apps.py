from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from analysis import (
            openapi,  # noqa: F401  the report's schema, registered before any is built
            receivers,  # noqa: F401  connects to generation's signals
        )
