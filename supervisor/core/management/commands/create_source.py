import json

from django.core.management.base import BaseCommand, CommandError

from supervisor.core.models import Source
from supervisor.core.snapshot import DetectionSettings
from supervisor.core.sources import ScopeError, do_create_source


class Command(BaseCommand):
    help = "Create an event source and print its bearer token (shown this once only)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--namespace", help="Share ids with other sources (default: NAME).")
        parser.add_argument("--scopes", default="ingest,read", help="ingest,read,act")
        parser.add_argument(
            "--detection",
            default="{}",
            help="detection overrides in seconds, e.g. '{\"stuck_after\": 120}'",
        )

    def handle(self, name, namespace, scopes, detection, **options):
        if Source.objects.filter(name=name).exists():
            raise CommandError(f"a source named {name!r} exists already")
        try:
            overrides = json.loads(detection)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--detection is not JSON: {exc}") from None
        known = set(DetectionSettings.__dataclass_fields__)
        if not isinstance(overrides, dict) or set(overrides) - known:
            raise CommandError(f"--detection takes an object with keys among {sorted(known)}")
        if not all(isinstance(v, int | float) and v > 0 for v in overrides.values()):
            raise CommandError("--detection values are positive numbers of seconds")
        try:
            source, token = do_create_source(name, namespace, scopes, settings=overrides)
        except ScopeError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Source {source.name!r} in namespace {source.namespace.name!r}, "
            f"scopes {source.scopes}. Keep this token; it is not shown again:"
        )
        self.stdout.write(token)
