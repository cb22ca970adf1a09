from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0011_language_model_without_weights"),
    ]

    operations = [
        migrations.AlterField(
            model_name="languagemodel",
            name="source_kind",
            field=models.CharField(
                choices=[
                    ("hub", "Hugging Face model id"),
                    ("path", "local directory"),
                    ("package_gguf", "GGUF file inside an installed Python package"),
                    ("none", "no weights: texts written by hand"),
                    ("external", "an API model recorded by its id, never run"),
                ],
                max_length=16,
            ),
        ),
    ]
