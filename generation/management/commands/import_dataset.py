import argparse
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.services.datasets import (
    ImportFailed,
    dataset_import_misgendered,
    dataset_import_ruff,
    dataset_import_tango,
)
from generation.services.distractors import COUNTS, SAMPLE_SEED_CHOICES, dataset_import_ruff_distractors


class Command(BaseCommand):
    help = "Import a template dataset (MISGENDERED, RUFF or TANGO). Atomic and idempotent."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=["misgendered", "ruff", "tango", "ruff-distractors"])
        parser.add_argument("--templates", type=Path, help="the template file (CSV, TSV or JSONL)")
        parser.add_argument("--task", type=Path, help="ruff-distractors: RUFF's task.tsv")
        parser.add_argument("--context", type=Path, help="ruff-distractors: RUFF's context.tsv")
        parser.add_argument(
            "--distractors", type=_counts, default=None, help="ruff-distractors: a count 0-5, or a range such as 0-5"
        )
        parser.add_argument(
            "--sample-seed",
            choices=SAMPLE_SEED_CHOICES,
            default="none",
            help="ruff-distractors: store RUFF's sample for this seed (2,160 per count) instead of the full set",
        )
        parser.add_argument("--names-dir", type=Path, help="MISGENDERED: directory of *.txt name lists")
        parser.add_argument("--names-per-template", type=int, default=15)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--name", help="dataset name (default: the kind)")
        parser.add_argument("--json", action="store_true", help="end with a JSON summary line")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="MISGENDERED: redraw the names of a dataset imported under an earlier draw rule (same templates)",
        )

    def handle(self, *args, kind: str, templates: Path, names_dir: Path | None, **options):
        name = options["name"] or kind
        if kind == "ruff-distractors":
            return self._distractors(name, options)
        if templates is None:
            raise CommandError(f"{kind} needs --templates PATH")
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
                    replace=options["replace"],
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
        if result.replaced:
            verb = f"redrew the names of {result.replaced} instances of"
        counts = ", ".join(f"{base} {n}" for base, n in result.per_pronoun.items())
        self.stdout.write(f"{verb} {result.dataset.name}: {result.instances} instances ({counts})")
        if result.skipped:
            families = ", ".join(f"{family} {n}" for family, n in sorted(result.skipped.items()))
            self.stdout.write(f"skipped rows of pronoun families Concord does not study: {families}")
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json()))

    def _distractors(self, name: str, options) -> None:
        if options["task"] is None or options["context"] is None:
            raise CommandError("ruff-distractors needs --task PATH and --context PATH")
        seed = None if options["sample_seed"] == "none" else int(options["sample_seed"])
        try:
            result = dataset_import_ruff_distractors(
                task_path=options["task"],
                context_path=options["context"],
                distractors=options["distractors"] or COUNTS,
                sample_seed=seed,
                name=name,
            )
        except ImportFailed as exc:
            raise CommandError(f"import failed, nothing written:\n{exc}") from None
        counts = ", ".join(f"{n} with {count}" for count, n in result.by_distractors.items())
        what = "the full set" if seed is None else f"RUFF's sample for seed {seed}"
        self.stdout.write(
            f"{result.dataset.name}: {result.instances} instances, {what} ({counts}); wrote {result.written} rows "
            f"in {result.seconds:.1f} s ({result.rows_per_second:,.0f} rows/s)"
        )
        if options["json"]:
            self.stdout.write(json.dumps(result.as_json()))


def _counts(value: str) -> list[int]:
    """`3`, `0-5` or `1,2`: the distractor counts to import."""
    try:
        if "-" in value:
            low, high = (int(part) for part in value.split("-", 1))
            counts = list(range(low, high + 1))
        else:
            counts = [int(part) for part in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a count 0-5 or a range such as 0-5") from None
    if not counts or any(c not in COUNTS for c in counts):
        raise argparse.ArgumentTypeError(f"{value!r}: distractor counts run from 0 to 5")
    return counts
