import json

from django.core.management.base import BaseCommand, CommandError

from supervisor.core import clock
from supervisor.core.audit import HEADER, AuditReport, audit
from supervisor.core.models import Namespace


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

    # Computing (`audit`) and printing stay apart so that other sources of the same
    # measures (a T3 database, say) can be added as options beside the stored history.
    def handle(self, as_json, namespaces, t3=None, **options):
        if t3:
            if namespaces:
                raise CommandError("--t3 audits the file alone: leave out --namespace")
            report = self._t3_audit(t3)
        else:
            report = audit(self._namespace_ids(namespaces))
        if as_json:
            self.stdout.write(json.dumps(report.as_json(), ensure_ascii=False))
        else:
            self.stdout.write(self._table(report))

    def _t3_audit(self, path: str) -> AuditReport:
        """Follow the file into a fresh in-memory store, judge it now, audit it."""
        # Imported here: the connector package imports the core's models.
        from supervisor.connectors.t3code.follower import Follower
        from supervisor.connectors.t3code.locate import state_database
        from supervisor.connectors.t3code.schema import StateDBError
        from supervisor.core.evaluate import evaluate
        from supervisor.core.scenario import ThrowAwayStore
        from supervisor.core.sources import do_create_source

        with ThrowAwayStore():
            source, _ = do_create_source("t3", "t3", "ingest,read")
            follower = Follower(source, state_database(path), evaluate=False)
            try:
                progress = follower.follow()
            except StateDBError as exc:
                raise CommandError(str(exc)) from None
            finally:
                follower.close()
            self.stderr.write(f"{path}: {progress.summary()}")
            evaluate(source.namespace_id, clock.now())
            return audit([source.namespace_id])

    def _namespace_ids(self, names: list[str] | None) -> list[int] | None:
        if not names:
            return None
        found = dict(Namespace.objects.filter(name__in=names).values_list("name", "pk"))
        missing = [name for name in names if name not in found]
        if missing:
            raise CommandError(f"no namespace named {', '.join(map(repr, missing))}")
        return [found[name] for name in names]

    def _table(self, report: AuditReport) -> str:
        rows = [HEADER, *report.as_rows()]
        widths = [max(len(row[column]) for row in rows) for column in range(len(HEADER))]
        # Measures left-aligned; numbers right-aligned so their digits line up.
        lines = [
            "  ".join(
                (label.ljust(widths[0]), value.rjust(widths[1]), share.rjust(widths[2]))
            ).rstrip()
            for label, value, share in rows
        ]
        namespaces = ", ".join(report.namespaces) or "(none)"
        return "\n".join([f"namespaces: {namespaces}", "", *lines])
