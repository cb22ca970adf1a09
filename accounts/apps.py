from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The audit trail (common/audit.py): users are the one model whose changes are recorded by auditlog's signals,
        # so that the admin site's edits (a role, a deactivation) are kept too. Only these fields: never the password.
        from auditlog.registry import auditlog
        from django.contrib.auth import get_user_model

        auditlog.register(
            get_user_model(),
            include_fields=["username", "is_active", "is_staff", "is_superuser"],
            m2m_fields={"groups"},
        )
