from django.core.management.base import BaseCommand, CommandError

from supervisor.core.models import Source
from supervisor.core.sources import ScopeError, do_create_source


class Command(BaseCommand):
    help = "Create an event source and print its bearer token (shown this once only)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--namespace", help="Share ids with other sources (default: NAME).")
        parser.add_argument("--scopes", default="ingest,read", help="ingest,read,act")

    def handle(self, name, namespace, scopes, **options):
        if Source.objects.filter(name=name).exists():
            raise CommandError(f"a source named {name!r} exists already")
        try:
            source, token = do_create_source(name, namespace, scopes)
        except ScopeError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Source {source.name!r} in namespace {source.namespace.name!r}, "
            f"scopes {source.scopes}. Keep this token; it is not shown again:"
        )
        self.stdout.write(token)
