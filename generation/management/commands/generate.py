import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from rest_framework import serializers

from generation.jobs.cli import job_follow_with_bar, job_run_with_bar
from generation.jobs.services import JobDispatchError, JobParameterError, job_create
from generation.parameters import ChoiceListField, JobParametersSerializer, NamedRowField, job_parameters_validate

# Fields of the definition the command leaves out (a generation job has no kind-specific options), and the extra
# spellings of a flag. Django's own --settings names a settings module: ours names evaluation settings.
NOT_FLAGS = ("kind", "options")
ALIASES = {"settings": ["--contexts"]}


def _argument_type(field: serializers.Field):
    if isinstance(field, NamedRowField | ChoiceListField):
        return str  # names, or comma separated lists: the definition parses them
    if isinstance(field, serializers.IntegerField):
        return int
    if isinstance(field, serializers.FloatField):
        return float
    return str


class Command(BaseCommand):
    help = (
        "Queue a generation job (probability scoring + sampling). With --wait, follow it to the end; with no broker "
        "configured it always runs here, in the foreground. The last line printed is a JSON summary. The flags are "
        "the job parameters of generation/parameters.py (bounds in settings: CONCORD_MAX_*)."
    )

    def add_base_argument(self, parser, *args, **kwargs):
        # Our --settings names evaluation settings (pre, post), not a Django settings module (use the env var).
        if "--settings" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser):
        parser.set_defaults(settings=None)  # read by Django's handle_default_options
        for name, field in JobParametersSerializer().fields.items():
            if name in NOT_FLAGS:
                continue
            flag = "--" + name.replace("_", "-")
            default = None if field.default is serializers.empty else field.default
            if isinstance(field, serializers.BooleanField):
                parser.add_argument(flag, action="store_true", default=bool(default), help=field.help_text)
                continue
            parser.add_argument(
                flag,
                *ALIASES.get(name, []),
                dest="contexts" if name == "settings" else name,
                type=_argument_type(field),
                default=default,
                required=name == "dataset",
                help=field.help_text,
            )
        parser.add_argument("--wait", action="store_true", help="follow the job until it ends, with a progress bar")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="check the parameters and print what the job would send (requests, tokens, cost); create nothing",
        )

    def handle(self, *args, **options):
        embedded = settings.CELERY_TASK_ALWAYS_EAGER
        parameters = {
            name: options["contexts" if name == "settings" else name]
            for name in JobParametersSerializer().fields
            if name not in NOT_FLAGS
        }
        if options["dry_run"]:
            return self._dry_run(parameters)
        try:
            job = job_create(queue=not embedded, **parameters)
        except JobParameterError as exc:
            raise CommandError(f"bad job parameters: {exc}") from None
        except JobDispatchError as exc:
            raise CommandError(f"{exc} Run `manage.py resume_jobs --job {exc.job_id}` once it is back.") from None
        self.stderr.write(
            f"job {job.pk}: {job.total_units} instances, {job.total_items} generations "
            f"({job.model.name} on {job.dataset.name if job.dataset else '-'})"
        )
        if embedded:
            if not options["wait"]:
                self.stderr.write("no broker configured (CELERY_BROKER_URL unset): running the job here")
            job = job_run_with_bar(job)
        elif options["wait"]:
            job = job_follow_with_bar(job)
        self.stdout.write(
            json.dumps(
                {
                    "job": job.pk,
                    "status": job.status,
                    "instances": job.total_units,
                    "generations": job.done_items,
                }
            )
        )
        if job.status == "failed":
            raise CommandError(f"job {job.pk} failed:\n{job.error.strip()}")

    def _dry_run(self, parameters: dict) -> None:
        from generation.selectors import job_estimate

        try:
            params = job_parameters_validate(**parameters)
        except JobParameterError as exc:
            raise CommandError(f"bad job parameters: {exc}") from None
        estimate = job_estimate(params=params)
        self.stderr.write(
            f"would send {estimate['requests']} requests, about {estimate['tokens_in']} tokens in and at most "
            f"{estimate['tokens_out']} out"
            + (f", about ${estimate['cost_usd']:.4f}" if estimate["cost_usd"] is not None else "")
        )
        self.stdout.write(json.dumps({"dry_run": True, **estimate}))
