import secrets

from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from accounts.roles import ROLES
from accounts.services import user_create_or_update


class Command(BaseCommand):
    help = "Create a user with one role (or reset an existing user's password and role)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", help="default: a random password, printed")
        parser.add_argument(
            "--project",
            help="a project the user joins (made if missing); a new researcher joins it instead of the default project",
        )

    def handle(self, *args, username: str, role: str, password: str | None, project: str | None = None, **options):
        if not username.strip():
            raise CommandError("username must not be empty")
        if password is not None and len(password) < 8:
            raise CommandError("--password must be at least 8 characters")
        generated = password is None
        password = password or secrets.token_urlsafe(9)
        if project is not None and slugify(project) != project:
            raise CommandError(f"--project: a project's name is a slug (letters, digits, - and _), got {project!r}")
        _, created = user_create_or_update(username=username, role=role, password=password, project=project)
        verb = "created" if created else "updated"
        shown = f" password: {password}" if generated else ""
        self.stdout.write(f"{verb} {role} {username}{shown}")
