import json

from django.core.management.base import BaseCommand, CommandError

from judging.panels import PanelError, panel_create, panel_members


class Command(BaseCommand):
    help = (
        "Make a panel (a jury) of finished judge runs over the same items: one machine rater named --name whose label "
        "of each item is the plurality of its members' labels (a tie: none) and whose probabilities are their mean. "
        "The panel's run then counts in the report like any judge's. The last line printed is a JSON summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="the panel's name (its judge's name in every table)")
        parser.add_argument("--runs", required=True, help="the member judge runs' ids, comma-separated: 3,5,8")
        parser.add_argument("--json", action="store_true", help="print only the JSON summary")

    def handle(self, *args, **options):
        runs = [part.strip() for part in options["runs"].split(",") if part.strip()]
        try:
            run, ties = panel_create(name=options["name"], runs=runs)
        except PanelError as exc:
            raise CommandError("bad panel:\n" + "\n".join(exc.errors)) from None
        members = panel_members(run=run)
        labels = run.labels.count()
        if not options["json"]:
            self.stdout.write(
                f"panel {run.judge.name} v{run.judge.version}: run {run.pk} on {run.scope}, {labels} labels from "
                f"runs {', '.join(str(m.pk) for m in members)} ({ties} tie{'s' if ties != 1 else ''}, no label)"
            )
        summary: dict[str, object] = {
            "run": run.pk, "panel": run.judge.name, "version": run.judge.version,
            **({"pool": run.pool.name} if run.pool is not None else {"job": run.source_job_id}),
            "members": [m.pk for m in members], "labels": labels, "n_ties": ties,
        }  # fmt: skip
        self.stdout.write(json.dumps(summary))
