import json

from django.core.management.base import BaseCommand, CommandError

from supervisor.core.access.sources import ScopeError, check_connector, do_add_source
from supervisor.core.contract.connectors import SettingsError
from supervisor.core.contract.source_names import NAME_LENGTH, ReservedName
from supervisor.core.facts.snapshot import DetectionSettings
from supervisor.core.models import Source


class Command(BaseCommand):
    help = "Create an event source and print its bearer token (shown this once only)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--namespace", help="Share ids with other sources (default: NAME).")
        parser.add_argument(
            "--scopes",
            default="ingest,read",
            help=f"comma-separated, among {','.join(Source.SCOPES)} (default: ingest,read)",
        )
        parser.add_argument(
            "--detection",
            default="{}",
            help="detection overrides in seconds, e.g. '{\"stuck_after\": 120}'",
        )
        parser.add_argument(
            "--connector", default="", help="what acts for its tasks: webhook or t3code"
        )
        parser.add_argument(
            "--connector-settings",
            default="{}",
            help='the connector\'s settings, e.g. \'{"url": "https://…", "secret": "…"}\'',
        )

    def handle(self, name, namespace, scopes, detection, connector, connector_settings, **options):
        for what, value in (("the name", name), ("--namespace", namespace or "")):
            if len(value) > NAME_LENGTH:
                raise CommandError(f"{what} is over {NAME_LENGTH} characters")
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
            bound = check_connector(connector, json.loads(connector_settings))
        except json.JSONDecodeError as exc:
            raise CommandError(f"--connector-settings is not JSON: {exc}") from None
        except SettingsError as exc:
            raise CommandError(str(exc)) from None
        try:
            source, token = do_add_source(
                name, namespace, scopes, connector, bound, settings=overrides
            )
        except (ScopeError, ReservedName) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"Source {source.name!r} in namespace {source.namespace.name!r}, "
            f"scopes {source.scopes}, connector {source.connector or 'none'}. "
            "Keep this token; it is not shown again:"
        )
        self.stdout.write(token)
