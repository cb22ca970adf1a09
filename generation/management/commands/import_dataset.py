import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.services.datasets import (
    ImportFailed,
    dataset_import_misgendered,
    dataset_import_ruff,
    dataset_import_tango,
)


class Command(BaseCommand):
    help = "Import a template dataset (MISGENDERED, RUFF or TANGO). Atomic and idempotent."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["misgendered", "ruff", "tango"])
        parser.add_argument("--templates", required=True, type=Path, help="the template file (CSV, TSV or JSONL)")
        parser.add_argument("--names-dir", type=Path, help="MISGENDERED: directory of *.txt name lists")
        parser.add_argument("--names-per-template", type=int, default=15)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--name", help="dataset name (default: the kind)")
        parser.add_argument("--json", action="store_true", help="end with a JSON summary line")

    def handle(self, *args, kind: str, templates: Path, names_dir: Path | None, **options):
        name = options["name"] or kind
        try:
            if kind == "misgendered":
                if names_dir is None:
                    raise CommandError("misgendered needs --names-dir DIR (the directory of name lists)")
                result = dataset_import_misgendered(
                    templates_path=templates,
                    names_dir=names_dir,
                    names_per_template=options["names_per_template"],
                    seed=options["seed"],
                    name=name,
                )
            elif kind == "tango":
                if names_dir is not None:
                    raise CommandError("tango takes no --names-dir: its contexts already hold their names")
                result = dataset_import_tango(templates_path=templates, name=name)
            else:
                if names_dir is not None:
                    raise CommandError("ruff takes no --names-dir: its sentences have no names")
                result = dataset_import_ruff(templates_path=templates, name=name)
        except ImportFailed as exc:
            raise CommandError(f"import failed, nothing written:\n{exc}") from None
        verb = "imported" if result.created else "already imported, unchanged:"
        counts = ", ".join(f"{base} {n}" for base, n in result.per_pronoun.items())
        self.stdout.write(f"{verb} {result.dataset.name}: {result.instances} instances ({counts})")
        if result.skipped:
            families = ", ".join(f"{family} {n}" for family, n in sorted(result.skipped.items()))
            self.stdout.write(f"skipped rows of pronoun families Concord does not study: {families}")
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json()))
