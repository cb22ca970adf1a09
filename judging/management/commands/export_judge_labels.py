from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool
from judging.exports import generation_labels_export
from judging.models import JudgeRun


class Command(BaseCommand):
    help = (
        "Write a judge run's labels, one row per judged generation (a pool run: per item): generation, model, "
        "dataset, setting, pronoun, context, sample_index, item, label, confidence, prob_<label>, score_<label>. "
        "The format follows the file's suffix (.csv or .jsonl). `item` is the study item that shows the generation "
        "in --pool; without it, the items of any pool joined by ';'. With --check-run instead of --run, a check "
        "run's labels, one row per item and variant (rotation, target_family or probe)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", type=int, default=None, help="the judge run's id")
        parser.add_argument("--check-run", type=int, default=None, help="a check run's id (instead of --run)")
        parser.add_argument("--out", required=True, help="PATH.csv or PATH.jsonl")
        parser.add_argument("--pool", default=None, help="the pool whose items fill the `item` column")

    def handle(self, *args, **options):
        if (options["run"] is None) == (options["check_run"] is None):
            raise CommandError("give --run (a judge run) or --check-run (a check run)")
        if options["check_run"] is not None:
            return self._check(options)
        run = JudgeRun.objects.select_related("judge").filter(pk=options["run"]).first()
        if run is None:
            raise CommandError(f"no judge run {options['run']}")
        out = Path(options["out"])
        fmt = out.suffix.lstrip(".").lower()
        if fmt not in ("csv", "jsonl"):
            raise CommandError(f"--out must end in .csv or .jsonl, got {out.name!r}")
        pool = None
        if options["pool"]:
            pool = Pool.objects.filter(name=options["pool"]).first()
            if pool is None:
                raise CommandError(f"no pool {options['pool']!r}")
        text = generation_labels_export(run=run, fmt=fmt, pool=pool)
        out.write_text(text, encoding="utf-8")
        rows = text.count("\n") - (1 if fmt == "csv" else 0)
        self.stderr.write(f"wrote {rows} rows of judge run {run.pk} ({run.judge}) to {out}")

    def _check(self, options) -> None:
        from judging.exports import check_labels_export
        from judging.models import CheckRun

        run = CheckRun.objects.select_related("judge").filter(pk=options["check_run"]).first()
        if run is None:
            raise CommandError(f"no check run {options['check_run']}")
        out = Path(options["out"])
        fmt = out.suffix.lstrip(".").lower()
        if fmt not in ("csv", "jsonl"):
            raise CommandError(f"--out must end in .csv or .jsonl, got {out.name!r}")
        text = check_labels_export(run=run, fmt=fmt)
        out.write_text(text, encoding="utf-8")
        self.stderr.write(f"wrote the labels of check run {run.pk} ({run.kind} of {run.judge}) to {out}")
