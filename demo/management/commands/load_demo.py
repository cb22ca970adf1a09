from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from annotation.models import Pool
from demo import services as demo
from demo.judged import DEMO_JUDGE, DEMO_RATERS, judged_pool_load
from generation.datasets.misgendered import dataset_import_misgendered
from generation.datasets.ruff import dataset_import_ruff
from generation.datasets.tango import dataset_import_tango
from generation.datasets.templates import dataset_import_templates
from generation.jobs.services import job_create
from generation.models import DEFAULT_MODEL_NAME


class Command(BaseCommand):
    help = (
        "Load the demo: our own templates, demo users (their logins kept in var/, printed on every start), the pool `demo` of hand-written "
        "generations (ready at once), and a queued generation job of the default model over the demo templates, "
        "which the web server runs in the background; its pool `demo-live` appears when it finishes. Safe to run again."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-generate", action="store_true", help="do not queue the demo generation job (no `demo-live` pool)"
        )
        parser.add_argument(
            "--migrate", action="store_true", help="migrate the database first (one process start instead of two)"
        )
        parser.add_argument(
            "--new-passwords",
            action="store_true",
            help="give the demo users new passwords (ends their sessions and API tokens); otherwise the kept ones stay",
        )
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="the server's address, for the links printed at the end"
        )

    def handle(self, *args, no_generate: bool, migrate: bool, new_passwords: bool, url: str, **options):
        if migrate:
            call_command("migrate", interactive=False, verbosity=0)
        datasets = self._datasets()
        passwords = demo.demo_logins_ensure(new_passwords=new_passwords)
        pool, new_items, overlap = demo.shipped_pool_load()
        if new_items:
            self.stdout.write(
                f"pool {pool.name}: {new_items} hand-written items, {overlap} of them for both annotator1 and annotator2"
            )
        else:
            self.stdout.write(f"pool {pool.name}: ready ({pool.items.count()} items)")
        features, made = demo.features_pool_load()
        self.stdout.write(
            f"pool {features.name}: {'made' if made else 'ready'} ({features.items.count()} items: a qualification "
            "round of training items, gold items among the study items, RUFF items with a distractor)"
        )
        judged, made = judged_pool_load()
        self.stdout.write(
            f"pool {judged.name}: {'made' if made else 'ready'} ({judged.items.count()} items of a "
            f"{judged.jobs.get().total_items}-text job, labelled by {len(DEMO_RATERS)} demo raters and judged by "
            f"{DEMO_JUDGE}: demo data written by load_demo, so that every report section has figures)"
        )
        if not no_generate:
            self._live_job(datasets, url=url)

        kept = settings.DEMO_LOGINS_FILE
        self.stdout.write(f"demo logins (kept in {kept}; new ones with --new-passwords):")
        for username, role in demo.DEMO_USERS:
            self.stdout.write(f"  {role:<10} {username:<11} {passwords[username]}")

    def _datasets(self) -> list:
        results = [
            dataset_import_misgendered(
                templates_path=demo.DEMO_DIR / "misgendered_templates.csv",
                names_dir=demo.DEMO_DIR / "names",
                names_per_template=3,
                seed=42,
                name=demo.DATASETS[0],
            ),
            dataset_import_ruff(templates_path=demo.DEMO_DIR / "ruff_templates.tsv", name=demo.DATASETS[1]),
        ]
        # TANGO's demo contexts (and demo-ruff) are imported for admins to queue jobs on (`generate --dataset
        # demo-tango`); the first start's live job stays small (demo/services.py, LIVE_DATASETS).
        tango = dataset_import_tango(templates_path=demo.DEMO_DIR / "tango_misgendering.jsonl", name="demo-tango")
        # A benchmark of one's own (docs/domain.md, 'Your own templates'): ey/em and fae/faer beside the four.
        own = dataset_import_templates(
            codebook_path=demo.DEMO_DIR / "templates_codebook.csv",
            templates_path=demo.DEMO_DIR / "templates_templates.csv",
            names_path=demo.DEMO_DIR / "templates_names.txt",
            names_per_template=2,
            seed=42,
            name=demo.TEMPLATES_DATASET,
        )
        for result in [*results, tango, own]:
            self.stdout.write(f"dataset {result.dataset.name}: {result.instances} instances")
        return [result.dataset for result in results]

    def _live_job(self, datasets: list, *, url: str) -> None:
        """Queue the live demo job once (demo/services.py: one instance per pronoun, one setting, 5 samples).

        Queued without dispatching: this command ends before the job would, so the web server's embedded runner
        runs it (it resumes queued jobs when it starts; with Celery workers, `resume_jobs` sends it to them).
        """
        existing = {job.generation_run.dataset_id: job for job in demo.live_jobs()}
        for dataset in datasets:
            if dataset.name not in demo.LIVE_DATASETS:
                continue
            job = existing.get(dataset.pk) or demo.live_job_adopt(dataset_name=dataset.name)
            if job is None:
                job = job_create(
                    model=DEFAULT_MODEL_NAME,
                    dataset=dataset,
                    settings=list(demo.LIVE_SETTINGS),
                    per_pronoun=demo.LIVE_PER_PRONOUN,
                    seed=0,
                    queue=False,
                )
                demo.live_job_record(job=job)
                self.stdout.write(
                    f"queued job {job.pk}: {job.total_items} continuations of {dataset.name} by "
                    f"{DEFAULT_MODEL_NAME} on the CPU (first start only)"
                )
        if demo.live_pool_draw() is not None or Pool.objects.filter(name=demo.LIVE_POOL).exists():
            self.stdout.write(f"pool {demo.LIVE_POOL}: ready")
        else:
            self.stdout.write(
                f"the demo generation runs in the background once the server is up: follow it at {url}/generation/jobs/ "
                f"(the pool {demo.LIVE_POOL} appears when it finishes)"
            )
