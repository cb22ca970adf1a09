from django.db import migrations

HAND_WRITTEN = "demo-hand-written"  # demo.services.HAND_WRITTEN, written out: a migration keeps its own constants


def forward(apps, schema_editor):
    """The demo's hand-written texts were registered as a model read from a directory, which the job form offered
    and which failed when loaded: they are a model without weights."""
    apps.get_model("generation", "LanguageModel").objects.filter(name=HAND_WRITTEN, source_kind="path").update(
        source_kind="none"
    )


def backward(apps, schema_editor):
    apps.get_model("generation", "LanguageModel").objects.filter(name=HAND_WRITTEN, source_kind="none").update(
        source_kind="path"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("demo", "0001_live_job"),
        ("generation", "0011_language_model_without_weights"),
    ]

    operations = [migrations.RunPython(forward, backward)]
