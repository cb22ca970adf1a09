import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.roles import ADMIN, ANNOTATOR, RESEARCHER
from accounts.services import user_create_or_update
from generation.services.datasets import dataset_import_misgendered, dataset_import_ruff

DEMO_USERS = (("admin", ADMIN), ("researcher", RESEARCHER), ("annotator1", ANNOTATOR), ("annotator2", ANNOTATOR))


class Command(BaseCommand):
    help = "Load the demo templates (ours, not the datasets') and create demo users with fresh printed passwords."

    def handle(self, *args, **options):
        demo = Path(settings.BASE_DIR) / "demo"
        results = [
            dataset_import_misgendered(
                templates_path=demo / "misgendered_templates.csv",
                names_dir=demo / "names",
                names_per_template=3,
                seed=42,
                name="demo-misgendered",
            ),
            dataset_import_ruff(templates_path=demo / "ruff_templates.tsv", name="demo-ruff"),
        ]
        for result in results:
            self.stdout.write(f"dataset {result.dataset.name}: {result.instances} instances")
        self.stdout.write("demo logins (passwords are new on every start):")
        for username, role in DEMO_USERS:
            password = secrets.token_urlsafe(9)
            user_create_or_update(username=username, role=role, password=password)
            self.stdout.write(f"  {role:<10} {username:<11} {password}")
