from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0003_judge_run_parameters_in_its_job"),
    ]

    operations = [
        migrations.AddField(
            model_name="judge",
            name="description",
            field=models.TextField(blank=True, help_text="what the judge is (an external judge's own words)"),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="origin",
            field=models.CharField(
                choices=[("concord", "run by Concord"), ("imported", "imported from a file")],
                default="concord",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="source_file",
            field=models.CharField(blank=True, help_text="the imported file's name", max_length=300),
        ),
        migrations.AlterField(
            model_name="judge",
            name="mode",
            field=models.CharField(
                choices=[
                    ("likelihood", "likelihood (mean log-probability of each option)"),
                    ("sampling", "sampling (k samples, majority vote)"),
                    ("imported", "imported (labels made elsewhere; never run by Concord)"),
                ],
                default="likelihood",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="machinelabel",
            name="confidence",
            field=models.FloatField(blank=True, help_text="none: an imported label without one", null=True),
        ),
    ]
