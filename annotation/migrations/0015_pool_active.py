from django.db import migrations, models


class Migration(migrations.Migration):
    """Active pools (docs/domain.md, "Spending people's labels where they count"): the judge run and budget that drew
    a pool, and each item's inclusion probability."""

    dependencies = [("annotation", "0014_pool_recruitment")]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="active_run_id",
            field=models.PositiveIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="pool",
            name="active_budget",
            field=models.FloatField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="poolitem",
            name="inclusion_probability",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
