"""The job keeps what every kind has: the generation parameters now live in `GenerationRun` (0015) and a judge
run's in `JudgeRun` (judging 0006)."""

from django.db import migrations, models

GONE = ("dataset", "pronouns", "settings", "samples", "max_new_tokens", "top_k", "top_p", "num_beams", "seed",
        "per_pronoun", "prob_score")  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("generation", "0015_generation_run"), ("judging", "0006_judge_run_parameters")]

    operations = [
        migrations.RemoveConstraint(model_name="job", name="job_generation_has_dataset"),
        migrations.RemoveConstraint(model_name="job", name="job_samples_positive"),
        migrations.RemoveConstraint(model_name="job", name="job_max_new_tokens_positive"),
        migrations.RemoveConstraint(model_name="job", name="job_top_p_range"),
        migrations.RemoveConstraint(model_name="job", name="job_num_beams_positive"),
        *(migrations.RemoveField(model_name="job", name=name) for name in GONE),
        migrations.AddConstraint(
            model_name="generationrun",
            constraint=models.CheckConstraint(condition=models.Q(samples__gte=1), name="job_samples_positive"),
        ),
        migrations.AddConstraint(
            model_name="generationrun",
            constraint=models.CheckConstraint(
                condition=models.Q(max_new_tokens__gte=1), name="job_max_new_tokens_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="generationrun",
            constraint=models.CheckConstraint(
                condition=models.Q(top_p__gt=0) & models.Q(top_p__lte=1), name="job_top_p_range"
            ),
        ),
        migrations.AddConstraint(
            model_name="generationrun",
            constraint=models.CheckConstraint(condition=models.Q(num_beams__gte=1), name="job_num_beams_positive"),
        ),
        migrations.AlterField(
            model_name="job",
            name="batch_size",
            field=models.PositiveIntegerField(blank=True, help_text="units per chunk; empty: the model's", null=True),
        ),
        migrations.AlterField(
            model_name="job",
            name="options",
            field=models.JSONField(
                blank=True, default=dict, help_text="the parameters of a kind without a table of its own (validated by it)"
            ),
        ),
    ]
