"""The job's progress counters and the chunk's units get names that fit every job kind (a judge job counts pool items
and labels, not instances and generations). RenameField keeps the data."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0009_templates_kind_and_prob_score"),
    ]

    operations = [
        migrations.RenameField(model_name="generationjob", old_name="total_instances", new_name="total_units"),
        migrations.RenameField(model_name="generationjob", old_name="done_instances", new_name="done_units"),
        migrations.RenameField(model_name="generationjob", old_name="total_generations", new_name="total_items"),
        migrations.RenameField(model_name="generationjob", old_name="done_generations", new_name="done_items"),
        migrations.RenameField(model_name="jobchunk", old_name="instance_ids", new_name="unit_ids"),
        migrations.AlterField(
            model_name="generationjob",
            name="run_done_at_start",
            field=models.PositiveIntegerField(default=0, help_text="items already done when it began"),
        ),
    ]
