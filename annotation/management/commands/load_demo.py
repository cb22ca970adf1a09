import secrets
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER
from accounts.services import user_create_or_update
from annotation.models import Pool
from annotation.services import assignments_create, pool_sample
from generation.models import DEFAULT_MODEL_NAME, GenerationJob, JobStatus
from generation.services.datasets import dataset_import_misgendered, dataset_import_ruff
from generation.services.jobs import job_create, job_run

DEMO_USERS = (("admin", ADMIN), ("researcher", RESEARCHER), ("annotator1", ANNOTATOR), ("annotator2", ANNOTATOR))
DEMO_POOL = "demo"


class Command(BaseCommand):
    help = (
        "Load the demo: our own templates, a small generation run of the default model on the CPU (first start only), "
        "a pool assigned to two annotators, and demo users with fresh printed passwords. Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-generate", action="store_true", help="skip the demo generation run and its pool (faster start)"
        )

    def handle(self, *args, no_generate: bool, **options):
        demo = Path(settings.BASE_DIR) / "demo"
        datasets = [
            dataset_import_misgendered(
                templates_path=demo / "misgendered_templates.csv",
                names_dir=demo / "names",
                names_per_template=3,
                seed=42,
                name="demo-misgendered",
            ),
            dataset_import_ruff(templates_path=demo / "ruff_templates.tsv", name="demo-ruff"),
        ]
        for result in datasets:
            self.stdout.write(f"dataset {result.dataset.name}: {result.instances} instances")
        passwords = {}
        for username, role in DEMO_USERS:
            passwords[username] = secrets.token_urlsafe(9)
            user_create_or_update(username=username, role=role, password=passwords[username])
        if not no_generate:
            jobs = [self._demo_job(result.dataset) for result in datasets]
            self._demo_pool(jobs)

        self.stdout.write("demo logins (passwords are new on every start):")
        for username, role in DEMO_USERS:
            self.stdout.write(f"  {role:<10} {username:<11} {passwords[username]}")

    def _demo_job(self, dataset) -> GenerationJob:
        """Two instances per pronoun, both settings, 5 samples: 80 continuations per dataset, once."""
        job = GenerationJob.objects.filter(
            dataset=dataset, model__name=DEFAULT_MODEL_NAME, status=JobStatus.DONE
        ).first()
        if job is not None:
            return job
        job = job_create(model=DEFAULT_MODEL_NAME, dataset=dataset, per_pronoun=2, seed=0, queue=False)
        self.stdout.write(
            f"generating {job.total_generations} demo continuations of {dataset.name} with {DEFAULT_MODEL_NAME} on the CPU "
            "(first start only)..."
        )
        sys.stdout.flush()
        job = job_run(job_id=job.pk)
        if job.status != JobStatus.DONE:
            raise RuntimeError(f"the demo generation job {job.pk} ended {job.status}:\n{job.error}")
        return job

    def _demo_pool(self, jobs: list[GenerationJob]) -> None:
        if Pool.objects.filter(name=DEMO_POOL).exists():
            return
        result = pool_sample(name=DEMO_POOL, job_ids=[job.pk for job in jobs], per_cell=5, seed=0)
        assigned = assignments_create(pool=result.pool, usernames=["annotator1", "annotator2"], overlap=20, seed=0)
        self.stdout.write(
            f"pool {DEMO_POOL}: {result.items} items, {assigned.overlap_items} of them for both annotator1 and annotator2"
        )
