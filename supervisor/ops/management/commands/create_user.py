"""`create_user NAME --role viewer|operator|admin [--password-file F]`: a login with a
role; without a password file, a generated password is printed this once."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from supervisor.core.access.roles import ROLES, RoleError, do_create_user
from supervisor.ops.logins import PasswordFileError, password_from_file


class Command(BaseCommand):
    help = "Create a login with a role; prints a generated password once if none is given."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--role", required=True, choices=list(ROLES))
        parser.add_argument(
            "--password-file",
            type=Path,
            help="read the password from this file (its first line); default: generate one",
        )

    def handle(self, name, role, password_file, **options):
        password = None
        if password_file is not None:
            try:
                password = password_from_file(password_file)
            except PasswordFileError as exc:
                raise CommandError(str(exc)) from None
        try:
            user, password_used = do_create_user(name, role, password)
        except RoleError as exc:
            raise CommandError(str(exc)) from None
        if password is None:
            self.stderr.write(
                f"User {user.get_username()!r} with the {role} role. "
                "Keep this password; it is not shown again:"
            )
            self.stdout.write(password_used)
        else:
            self.stderr.write(f"User {user.get_username()!r} with the {role} role.")
