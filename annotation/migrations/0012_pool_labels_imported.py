from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_pool_guidelines"),
    ]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="positive_label",
            field=models.CharField(
                blank=True,
                help_text="the label rates count; empty: misgendering (the set must have it)",
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="annotation",
            name="origin",
            field=models.CharField(
                choices=[("concord", "made in Concord"), ("imported", "imported from a file")],
                db_default="concord",
                default="concord",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="poolitem",
            name="external_id",
            field=models.CharField(blank=True, help_text="the item's id in its imported file", max_length=200),
        ),
        migrations.AddConstraint(
            model_name="poolitem",
            constraint=models.UniqueConstraint(
                condition=models.Q(("external_id", ""), _negated=True),
                fields=("pool", "external_id"),
                name="pool_item_unique_external_id",
            ),
        ),
    ]
