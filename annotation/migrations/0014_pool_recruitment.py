import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import annotation.models


class Migration(migrations.Migration):
    """A pool's study on a crowd platform (docs/domain.md, "Recruiting on a crowd platform"): its recruitment and the
    participants who came through its link."""

    dependencies = [
        ("annotation", "0013_pool_item_free_text"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Recruitment",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("platform", models.CharField(choices=[("prolific", "Prolific")], default="prolific", max_length=16)),
                (
                    "token",
                    models.CharField(
                        default=annotation.models.new_study_token, editable=False, max_length=64, unique=True
                    ),
                ),
                ("is_open", models.BooleanField(default=True)),
                ("items_per_person", models.PositiveIntegerField(help_text="study items each participant annotates")),
                ("completion_code", models.CharField(max_length=64)),
                (
                    "screened_code",
                    models.CharField(
                        blank=True, help_text="shown to one who fails the training round; empty: no code", max_length=64
                    ),
                ),
                (
                    "max_people",
                    models.PositiveIntegerField(
                        blank=True, help_text="participants at most; empty: no limit", null=True
                    ),
                ),
                (
                    "timeout_minutes",
                    models.PositiveIntegerField(
                        default=60,
                        help_text="an idle participant's open study items go back to the queue after this long",
                    ),
                ),
                ("overlap", models.PositiveIntegerField(default=0)),
                ("raters", models.PositiveIntegerField(default=2)),
                (
                    "overlap_items",
                    models.JSONField(default=list, editable=False, help_text="the overlap items' ids, drawn once"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL
                    ),
                ),
                (
                    "pool",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="recruitment", to="annotation.pool"
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Participant",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("participant_id", models.CharField(max_length=64)),
                ("study_id", models.CharField(blank=True, max_length=64)),
                ("session_id", models.CharField(blank=True, max_length=64)),
                ("started_at", models.DateTimeField(auto_now_add=True)),
                ("last_seen_at", models.DateTimeField(help_text="the last visit of the link or the finish page")),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "outcome",
                    models.CharField(
                        blank=True,
                        choices=[("completed", "completed"), ("screened", "screened out (failed the training round)")],
                        max_length=16,
                    ),
                ),
                ("code_shown", models.CharField(blank=True, max_length=64)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="participant",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "recruitment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="participants",
                        to="annotation.recruitment",
                    ),
                ),
            ],
            options={
                "ordering": ["started_at", "pk"],
            },
        ),
        migrations.AddConstraint(
            model_name="recruitment",
            constraint=models.CheckConstraint(
                condition=models.Q(("items_per_person__gte", 1)), name="recruitment_items_per_person_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="recruitment",
            constraint=models.CheckConstraint(
                condition=models.Q(("timeout_minutes__gte", 1)), name="recruitment_timeout_positive"
            ),
        ),
        migrations.AddConstraint(
            model_name="recruitment",
            constraint=models.CheckConstraint(
                condition=models.Q(("raters__gte", 2)), name="recruitment_raters_at_least_2"
            ),
        ),
        migrations.AddConstraint(
            model_name="participant",
            constraint=models.UniqueConstraint(fields=("recruitment", "participant_id"), name="participant_unique_id"),
        ),
    ]
