from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from accounts.projects import ProjectError, project_add


class Command(BaseCommand):
    help = (
        "Make a project (or keep the one of that name) and add researchers to it: its members alone see its pools, "
        "reports, exports, audit entries and participants; admins see every project's."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the project's name (a slug)")
        parser.add_argument("--members", default="", help="usernames to add, comma separated")

    def handle(self, *args, name: str, members: str, **options):
        limit = 64
        if not name or slugify(name) != name or len(name) > limit:
            raise CommandError(
                f"a project's name is a slug of at most {limit} characters (letters, digits, - and _), got {name!r}"
            )
        try:
            project, created, added = project_add(name=name, members=members.split(","))
        except ProjectError as exc:
            raise CommandError(str(exc)) from None
        verb = "created" if created else "kept"
        joined = f"; added {', '.join(added)}" if added else "; no new members"
        self.stdout.write(f"{verb} project {project.name}{joined} ({project.members.count()} members)")
