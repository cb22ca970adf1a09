import argparse
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.datasets.distractor_rows import COUNTS
from generation.datasets.files import ImportFailed
from generation.datasets.registry import DATASET_KINDS
from generation.datasets.ruff_distractors import SAMPLE_SEED_CHOICES


class Command(BaseCommand):
    help = (
        "Import a template dataset (MISGENDERED, RUFF, TANGO, or your own: templates --codebook C.csv --templates "
        "T.csv|T.jsonl [--names NAMES.txt]), or a stereotype pair benchmark (crows-pairs|stereoset --file F "
        "[--bias-type gender]). Atomic and idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=list(DATASET_KINDS))
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
        parser.add_argument(
            "--codebook", type=Path, help="templates: the codebook CSV (base, nom, acc, pos_dep, pos_ind, ref)"
        )
        parser.add_argument(
            "--file", type=Path, help="crows-pairs: crows_pairs_anonymized.csv; stereoset: dev.json (intrasentence)"
        )
        parser.add_argument("--bias-type", help="crows-pairs, stereoset: only the pairs of this bias type (gender)")
        parser.add_argument("--names", type=Path, help="templates: a names file, one name a line (for {name})")
        parser.add_argument("--names-per-template", type=int, default=15)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--name", help="dataset name (default: the kind)")
        parser.add_argument("--json", action="store_true", help="end with a JSON summary line")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="MISGENDERED: redraw the names of a dataset imported under an earlier draw rule (same templates)",
        )

    def handle(self, *args, kind: str, **options):
        name = options["name"] or kind
        spec = DATASET_KINDS[kind]
        if spec.reads_template_file:
            if spec.codebook is not None and (options["codebook"] or options["names"]):
                raise CommandError(f"{kind} takes no --codebook or --names (those are for the templates kind)")
            if options["templates"] is None:
                raise CommandError(f"{kind} needs --templates PATH")
        try:
            result = spec.command_import(name, options)
        except ImportFailed as exc:
            raise CommandError(f"import failed, nothing written:\n{exc}") from None
        for line in result.lines():
            self.stdout.write(line)
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
