import json
import textwrap

from django.core.management.base import BaseCommand, CommandError

from supervisor.core import clock
from supervisor.core.audit import HEADER, AuditReport, audit
from supervisor.core.models import Namespace

# What each count means, printed under the table: the audit is seed 000's hand measure,
# narrower than the flags (a task flagged stale_result need not have been finalized in
# the 3 s gap), so a bare number misled (issue 19, point 8). supervisor/core/audit.py
# has the exact definitions.
MEANINGS = [
    "tasks seen: delegated tasks whose task.delegated arrived, in the namespaces audited.",
    "finalized in the gap before a later run: tasks whose first terminal report came at "
    "most 3 s before a later run of the child (one the task owns, after its result run) "
    "was requested: seed 000's race, timed. Not a count of stale_result flags: that flag "
    "is any parent handed a text other than the latest result, however far apart the "
    "runs were, so the flags page may list tasks this leaves out.",
    "handed an earlier run's text: of those, tasks whose parent was handed the text of a "
    "run before that later one (an interim text).",
    "undelivered_result open: tasks with an undelivered_result flag open now (a later "
    "result never reached the parent); resolved ones are not counted.",
    "later results that reached the parent: results of the task's runs after its result "
    "run that a wake carried to the parent; the delays are from the run's end to that "
    "wake being queued (median; p90 by nearest rank).",
    "share of tasks seen: the count divided by tasks seen.",
]


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
        legend = ["What each count means:"] + [
            textwrap.fill(meaning, 88, initial_indent="- ", subsequent_indent="  ")
            for meaning in MEANINGS
        ]
        return "\n".join([f"namespaces: {namespaces}", "", *lines, "", *legend])
