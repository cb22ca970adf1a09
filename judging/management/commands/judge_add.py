import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.json_input import json_loads
from generation.jobs.services import JobParameterError
from generation.models import DEFAULT_MODEL_NAME
from judging.models import JudgeMode
from judging.services.judges import judge_add


class Command(BaseCommand):
    help = (
        "Add an LLM judge (a registered model with a prompt template), or a new version of one when the model, mode, "
        "template or options differ from its latest version. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="the judge's name")
        parser.add_argument("--model", default=DEFAULT_MODEL_NAME, help="registered model name")
        parser.add_argument(
            "--template", type=Path, default=None, help="prompt template file (default: the shipped one)"
        )
        parser.add_argument("--mode", default=JudgeMode.LIKELIHOOD, help="likelihood (default) or sampling")
        parser.add_argument(
            "--options", type=Path, default=None, help='JSON file: label -> option text, e.g. {"correct": " correct"}'
        )

    def handle(self, *args, **options):
        template = _read(options["template"], "template") if options["template"] else None
        choices = None
        if options["options"]:
            try:
                choices = json_loads(_read(options["options"], "options"))
            except json.JSONDecodeError as exc:
                raise CommandError(f"{options['options']}:{exc.lineno}: not JSON ({exc.msg})") from None
        try:
            judge, created = judge_add(
                name=options["name"], model=options["model"], template=template, mode=options["mode"], options=choices
            )
        except JobParameterError as exc:
            raise CommandError(f"bad judge: {exc}") from None
        self.stderr.write(f"judge {judge}: {'added' if created else 'unchanged (same as its latest version)'}")
        self.stdout.write(
            json.dumps(
                {
                    "judge": judge.name,
                    "version": judge.version,
                    "model": judge.model.name,
                    "mode": judge.mode,
                    "created": created,
                }
            )  # fmt: skip
        )


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the {what} file {path}: {exc}") from None
