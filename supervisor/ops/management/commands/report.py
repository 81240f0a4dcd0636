import json

from django.core.management.base import BaseCommand, CommandError

from supervisor.connectors.t3code.schema import StateDBError
from supervisor.ops.report import UnknownNamespace, audit_stored, audit_t3, table


class Command(BaseCommand):
    help = (
        "Audit the stored history as seed 000 did by hand: tasks finalized in the gap "
        "before a later run, interim texts handed to the parent, undelivered results and "
        "how long later results took to reach the parent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="one JSON object")
        parser.add_argument(
            "--namespace",
            action="append",
            dest="namespaces",
            metavar="NAME",
            help="audit only this namespace (repeat for several; default: all)",
        )
        parser.add_argument(
            "--t3",
            metavar="PATH",
            help="audit a T3 Code state database instead (read-only, through a throw-away "
            "store; the configured database is not touched)",
        )

    def handle(self, as_json, namespaces, t3=None, **options):
        if t3:
            if namespaces:
                raise CommandError("--t3 audits the file alone: leave out --namespace")
            try:
                report, progress = audit_t3(t3)
            except StateDBError as exc:
                raise CommandError(str(exc)) from None
            self.stderr.write(f"{t3}: {progress.summary()}")
        else:
            try:
                report = audit_stored(namespaces)
            except UnknownNamespace as exc:
                raise CommandError(str(exc)) from None
        if as_json:
            self.stdout.write(json.dumps(report.as_json(), ensure_ascii=False))
        else:
            self.stdout.write(table(report))
