import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Pool, Recruitment
from annotation.services.recruitment import (
    PLATFORMS,
    RecruitmentError,
    recruitment_close,
    recruitment_open,
    study_path,
)


class Command(BaseCommand):
    help = (
        "Open (or update, or close) a pool's recruitment on a crowd platform and print its study link, to paste into "
        "the platform's study (docs/guide-researcher.md, 'Recruiting on Prolific'). Flags left out keep their "
        'values. --json: the last line is {"url", "pool", "open", "platform", "items_per_person", ...}.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--platform", choices=PLATFORMS, default="prolific")
        parser.add_argument("--items-per-person", type=int, help="study items each participant annotates")
        parser.add_argument("--completion-code", help="the platform's completion code, shown when one finishes")
        parser.add_argument(
            "--screened-code", help="the code for one who fails the training round ('' for none: they are told why)"
        )
        parser.add_argument("--max-people", type=int, help="participants at most (default: no limit)")
        parser.add_argument(
            "--timeout-minutes", type=int, help="an idle participant's open items go back after this long (60)"
        )
        parser.add_argument("--overlap", type=int, help="study items that get --raters participants (default 0)")
        parser.add_argument("--raters", type=int, help="participants per overlap item (default 2)")
        parser.add_argument("--rotate", action="store_true", help="a new link: the old one stops working")
        parser.add_argument("--close", action="store_true", help="let nobody new in; participants already in finish")
        parser.add_argument(
            "--base-url", help=f"where participants reach Concord (default {settings.CONCORD_PUBLIC_URL})"
        )
        parser.add_argument("--json", action="store_true", help="print the state as JSON on the last line")

    def handle(self, *args, **options):
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None:
            raise CommandError(f"no pool named {options['pool']!r}")
        try:
            if options["close"]:
                recruitment = recruitment_close(pool=pool)
            else:
                recruitment = recruitment_open(
                    pool=pool,
                    platform=options["platform"],
                    items_per_person=options["items_per_person"],
                    completion_code=options["completion_code"],
                    screened_code=options["screened_code"],
                    max_people=options["max_people"],
                    timeout_minutes=options["timeout_minutes"],
                    overlap=options["overlap"],
                    raters=options["raters"],
                    rotate=options["rotate"],
                )
        except RecruitmentError as exc:
            raise CommandError(str(exc)) from None
        url = (options["base_url"] or settings.CONCORD_PUBLIC_URL).rstrip("/") + study_path(recruitment)
        state = _state(recruitment, url)
        if options["json"]:
            self.stdout.write(json.dumps(state))
            return
        self.stdout.write(f"Pool {pool.name}: recruitment {'open' if recruitment.is_open else 'closed'}.")
        self.stdout.write(f"Study URL (paste into {recruitment.get_platform_display()}): {url}")


def _state(recruitment: Recruitment, url: str) -> dict:
    return {
        "url": url,
        "pool": recruitment.pool.name,
        "open": recruitment.is_open,
        "platform": recruitment.platform,
        "items_per_person": recruitment.items_per_person,
        "completion_code": recruitment.completion_code,
        "screened_code": recruitment.screened_code or None,
        "max_people": recruitment.max_people,
        "timeout_minutes": recruitment.timeout_minutes,
        "overlap": recruitment.overlap,
        "raters": recruitment.raters,
        "participants": recruitment.participants.count(),
    }
