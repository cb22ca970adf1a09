from django.apps import AppConfig


class JudgingConfig(AppConfig):
    """Machine raters: LLM judges run over a pool's items (docs/domain.md, 'Machine raters')."""

    name = "judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from judging import hooks

        hooks.connect()
