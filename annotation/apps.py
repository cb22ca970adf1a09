from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The live demo pool is drawn when the demo generation job finishes (annotation/demo.py).
        from annotation import demo
        from generation.signals import job_finished

        job_finished.connect(demo.on_job_finished, dispatch_uid="annotation.demo.live_pool")
