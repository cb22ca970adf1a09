from django.db import migrations, models


class Migration(migrations.Migration):
    """Free-text generations (docs/domain.md, "Bring your own study"): a setting the file names (default `free`), an
    unstated pronoun (empty) and no heuristic verdict for it (null)."""

    dependencies = [
        ("annotation", "0012_pool_labels_imported"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="poolitem", name="pool_item_setting_valid"),
        migrations.AlterField(
            model_name="poolitem",
            name="heuristic_correct",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="poolitem",
            name="pronoun",
            field=models.CharField(
                blank=True, choices=[("he", "he"), ("she", "she"), ("they", "they"), ("xe", "xe")], max_length=8
            ),
        ),
        migrations.AlterField(
            model_name="poolitem",
            name="setting",
            field=models.CharField(
                choices=[
                    ("pre", "pre-[MASK]"),
                    ("post", "post-[MASK]"),
                    ("open", "open (TANGO)"),
                    ("free", "free text (imported)"),
                ],
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="poolitem",
            name="template",
            field=models.TextField(help_text="instance text with its mask marker; empty for free-text generations"),
        ),
        migrations.AddConstraint(
            model_name="poolitem",
            constraint=models.CheckConstraint(
                condition=models.Q(("setting__regex", "^[a-z][a-z0-9_-]{0,15}$")), name="pool_item_setting_valid"
            ),
        ),
    ]
