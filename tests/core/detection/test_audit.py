"""`core.audit` and `manage.py report`: seed 000's hand audit, on a history with known answers.

The fixture's expected table pins the definitions: every number below follows from the
timelines of the tasks in `history`, each of which says what it is there to show.
"""

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from supervisor.core.access.sources import do_create_source
from supervisor.core.detection.audit import AuditReport, TaskRef, audit
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.flags.kinds import CATALOGUE
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Flag
from supervisor.ops import report as reporting
from tests.support.factories import BASE, at, task_events

pytestmark = pytest.mark.django_db

LEAD = "thread:lead"
NS = "orchestrator"  # the namespace of conftest's `source`


class Timeline:
    """Events of one task, at seconds after its own origin (k * 1000 s after BASE)."""

    def __init__(self, name: str, k: int):
        self.name, self.origin = name, k * 1000
        self.task, self.child = f"task:{name}", f"thread:{name}"
        self.events: list[dict] = []

    def run_id(self, n: int) -> str:
        return f"{self.child}:{n}"

    def add(self, label: str, kind: str, seconds: float, data: dict) -> "Timeline":
        self.events.append(
            {
                "id": f"{self.name}-{label}",
                "type": kind,
                "at": at(self.origin + seconds),
                "data": data,
            }
        )
        return self

    def delegated(self, seconds=0):
        data = {"task": self.task, "parent_thread": LEAD, "child_thread": self.child}
        return self.add(
            "d", "task.delegated", seconds, {**data, "title": self.name, "mode": "async"}
        )

    def requested(self, n: int, seconds: float, trigger: dict):
        data = {"thread": self.child, "run": self.run_id(n), "ordinal": n, "trigger": trigger}
        return self.add(f"r{n}", "run.requested", seconds, data)

    def first_run(self, seconds=1):
        return self.requested(1, seconds, {"kind": "delegation", "task": self.task})

    def finished(self, n: int, seconds: float, summary: str):
        data = {"thread": self.child, "run": self.run_id(n), "status": "completed"}
        return self.add(f"f{n}", "run.finished", seconds, {**data, "summary": summary})

    def item(self, item: str, run: int, started: float, finished: float):
        data = {"thread": self.child, "item": item, "kind": "command", "run": self.run_id(run)}
        self.add(f"{item}-s", "background.started", started, data)
        return self.add(f"{item}-f", "background.finished", finished, data)

    def reported(self, seconds: float, summary: str, result_run: int | None = 1, label="rep"):
        data = {"task": self.task, "status": "completed", "summary": summary}
        if result_run is not None:
            data["result_run"] = self.run_id(result_run)
        return self.add(label, "task.reported", seconds, data)

    def wake(self, label: str, seconds: float, summary: str, source: dict | None = None):
        source = source or {"kind": "task", "task": self.task, "thread": self.child}
        data = {"wake": f"wake:{self.name}-{label}", "thread": LEAD, "source": source}
        return self.add(label, "wake.queued", seconds, {**data, "summary": summary})


def restart(t: Timeline, n: int) -> dict:
    return {"kind": "restart", "run": t.run_id(n)}


def history() -> list[dict]:
    events: list[dict] = []

    # A: finalized 0.069 s before the wake run for its command (as in the seed's first
    # timeline), handed run 1's interim text (white space differs); run 2's result is
    # delivered by hand 45 s after run 2 ended. Gap, handed earlier text, delay 45.
    a = Timeline("A", 1).delegated().first_run().item("bg-A", 1, 5, 100)
    a.finished(1, 10, "Waiting on clippy… A").reported(100, "Waiting on clippy… A")
    a.requested(2, 100.069, {"kind": "background", "item": "bg-A"})
    a.wake("w1", 100.141, "  Waiting on clippy…\n A ").finished(2, 130, "FINAL A")
    a.wake("manual", 175, "Delivered by Supervisor:\nFINAL A", {"kind": "manual", "task": a.task})
    events += a.events

    # B: finalized 1 s before a run woken by its background item's wake, then reported
    # again with the same text (the first terminal report is the one timed); run 2's
    # result never reaches the parent. Gap, handed earlier text, undelivered.
    b = Timeline("B", 2).delegated().first_run().item("bg-B", 1, 2, 50).finished(1, 10, "INTERIM B")
    bg_wake = {"wake": "wake:B-bg", "thread": b.child, "outcome": "completed"}
    b.add(
        "bgwake", "wake.queued", 50, {**bg_wake, "source": {"kind": "background", "item": "bg-B"}}
    )
    b.reported(51, "INTERIM B").wake("w1", 51.1, "INTERIM B")
    b.requested(2, 52, {"kind": "wake", "wake": "wake:B-bg"}).finished(2, 80, "FINAL B")
    b.reported(81, "INTERIM B", label="rep2")
    events += b.events

    # C: finalized 2 s before a restart of run 1, with a text of its own (no run's
    # summary); run 2's result never reaches the parent. Gap, not handed earlier text,
    # undelivered.
    c = Timeline("C", 3).delegated().first_run().finished(1, 10, "INTERIM C")
    c.reported(20, "Task completed.").wake("w1", 20.5, "Task completed.")
    c.requested(2, 22, restart(c, 1)).finished(2, 60, "FINAL C")
    events += c.events

    # D: finalized exactly 3 s before its wake run; the report names no result run (so
    # it is run 1, by text) and no wake carries it: handed by the report alone. Run 2's
    # result reaches the parent 600 s after it ended. Gap (bound included), handed
    # earlier text, delay 600; undelivered between +60 s and +600 s, resolved since.
    d = Timeline("D", 4).delegated().first_run().item("bg-D", 1, 2, 20)
    d.finished(1, 10, "INTERIM D").reported(20, "INTERIM D", result_run=None)
    d.requested(2, 23, {"kind": "background", "item": "bg-D"}).finished(2, 40, "FINAL D")
    d.wake("w2", 640, "FINAL D")
    events += d.events

    # E: finalized 10 s before its wake run: not in the gap. Delay 20.
    e = Timeline("E", 5).delegated().first_run().item("bg-E", 1, 2, 29)
    e.finished(1, 10, "INTERIM E").reported(20, "INTERIM E").wake("w1", 20.1, "INTERIM E")
    e.requested(2, 30, {"kind": "background", "item": "bg-E"}).finished(2, 50, "FINAL E")
    e.wake("w2", 70, "FINAL E")
    events += e.events

    # F: finalized 1 s after its later run was requested: not in the gap. Delay 30.
    f = Timeline("F", 6).delegated().first_run().finished(1, 10, "INTERIM F")
    f.requested(2, 19, restart(f, 1)).reported(20, "INTERIM F").wake("w1", 20.1, "INTERIM F")
    f.finished(2, 40, "FINAL F").wake("w2", 70, "FINAL F")
    events += f.events

    # G: first reported in the gap, then re-reported with run 2's result: its result run
    # is now run 2 (the current report's), so no later run, no gap, no delay.
    g = Timeline("G", 7).delegated().first_run().finished(1, 10, "INTERIM G")
    g.reported(20, "INTERIM G").requested(2, 21, restart(g, 1)).finished(2, 40, "FINAL G")
    g.reported(41, "FINAL G", result_run=2, label="rep2").wake("w2", 42, "FINAL G")
    events += g.events

    # H: its later run came 3.5 s after the report: just outside the gap. Delay 5.
    h = Timeline("H", 8).delegated().first_run().finished(1, 10, "RESULT H")
    h.reported(20, "RESULT H").wake("w1", 20.1, "RESULT H")
    h.requested(2, 23.5, restart(h, 1)).finished(2, 40, "MORE H").wake("w2", 45, "MORE H")
    events += h.events

    # I: a later run 40 s after the report, delivered 10 s after it ended by a follow-up
    # task's wake (any task id counts). Delay 10.
    i = Timeline("I", 9).delegated().first_run().item("bg-I", 1, 2, 59)
    i.finished(1, 10, "RESULT I").reported(20, "RESULT I").wake("w1", 20.1, "RESULT I")
    i.requested(2, 60, {"kind": "background", "item": "bg-I"}).finished(2, 90, "MORE I")
    i.wake("w2", 100, "MORE I", {"kind": "task", "task": "task:I-follow-up", "thread": i.child})
    events += i.events

    # J: a message woke the child 1 s after the report: that run is a follow-up, not
    # owned, so neither a gap finalization nor a later result.
    j = Timeline("J", 10).delegated().first_run().finished(1, 10, "RESULT J")
    j.reported(20, "RESULT J").wake("w1", 20.1, "RESULT J")
    j.requested(2, 21, {"kind": "message"}).finished(2, 30, "REPLY J").wake("w2", 37, "REPLY J")
    events += j.events

    # K, L: healthy: one run, reported and delivered.
    for name, k in (("K", 11), ("L", 12)):
        t = Timeline(name, k).delegated().first_run().finished(1, 10, f"RESULT {name}")
        events += t.reported(20, f"RESULT {name}").wake("w1", 20.1, f"RESULT {name}").events

    # A report of a task never delegated: not known, not seen, whatever its timeline.
    ghost = Timeline("ghost", 13).first_run().finished(1, 10, "GHOST").reported(20, "GHOST")
    events += ghost.requested(2, 21, restart(ghost, 1)).events
    return events


def seconds_after_base(seconds: float):
    return BASE + timedelta(seconds=seconds)


@pytest.fixture
def audited(source):
    """The history stored through the real ingest path (in reverse: arrival order must not
    matter), flags evaluated twice: before D's later result reached the parent (opens
    undelivered_result on D), and after it did (resolves it)."""
    events = history()
    late = [event for event in events if event["id"] == "D-w2"]
    apply_events(source, [event for event in reversed(events) if event not in late])
    evaluate(source.namespace_id, seconds_after_base(4000 + 300))
    apply_events(source, late)
    evaluate(source.namespace_id, seconds_after_base(14_000))
    return source


def refs(*names: str) -> list[TaskRef]:
    return [TaskRef(NS, f"task:{name}") for name in names]


EXPECTED_ROWS = [
    ("tasks seen", "12", ""),
    ("finalized in the gap before a later run (<= 3 s)", "4", "33.3%"),
    ("  handed an earlier run's text", "3", "25.0%"),
    ("undelivered_result open", "2", "16.7%"),
    ("never_delivered open (a starved delivery)", "0", "0.0%"),
    ("later results that reached the parent", "6", ""),
    ("  delay, median (s)", "25.0", ""),
    ("  delay, p90 nearest rank (s)", "600.0", ""),
]

# Every kind, in the catalogue's order; the fixture's tasks open these (its wakes are
# never delivered, so each is late).
NONE_OPEN = {kind: 0 for kind in CATALOGUE}
OPEN_BY_KIND = NONE_OPEN | {
    "premature_completion": 2,
    "stale_result": 2,
    "undelivered_result": 2,
    "orphan_wake": 1,
    "late_wake": 12,
}


def test_the_fixture_flags_are_what_the_audit_reads(audited):
    undelivered = Flag.objects.filter(kind="undelivered_result").values_list("subject_id", "state")
    assert sorted(undelivered) == [
        ("task:B", "open"),
        ("task:C", "open"),
        ("task:D", "resolved"),
    ]


def test_audit_of_the_fixture_gives_its_expected_table(audited):
    report = audit()
    assert report == AuditReport(
        namespaces=[NS],
        tasks_seen=12,
        gap_finalizations=refs("A", "B", "C", "D"),
        handed_earlier_text=refs("A", "B", "D"),
        undelivered_result_open=refs("B", "C"),
        # A, D, E, F, H, I: by task, then run.
        later_result_delays=[45.0, 600.0, 20.0, 30.0, 5.0, 10.0],
        open_by_kind=OPEN_BY_KIND,
    )
    assert list(report.open_by_kind) == list(CATALOGUE)
    # Median of an even count is the mean of the middle two (20, 30); nearest-rank p90 of
    # six is the 6th smallest (interpolation would give 322.5).
    assert (report.delay_median, report.delay_p90) == (25.0, 600.0)
    assert report.as_rows() == EXPECTED_ROWS


def test_nearest_rank_p90_of_ten_is_the_ninth():
    report = AuditReport(later_result_delays=[float(s) for s in range(10, 0, -1)])
    assert (report.delay_median, report.delay_p90) == (5.5, 9.0)


def test_an_empty_store_gives_zeros_and_no_shares(db):
    report = audit()
    assert report.as_json() == {
        "namespaces": [],
        "tasks_seen": 0,
        "gap_finalizations": {"count": 0, "share_of_tasks_seen": None, "tasks": []},
        "handed_earlier_text": {"count": 0, "share_of_tasks_seen": None, "tasks": []},
        "undelivered_result_open": {"count": 0, "share_of_tasks_seen": None, "tasks": []},
        "never_delivered_open": {"count": 0, "share_of_tasks_seen": None, "tasks": []},
        "later_result_delays": {"count": 0, "median_s": None, "p90_s": None},
        "open_flags_by_kind": NONE_OPEN,
    }


def report(*args) -> str:
    out = io.StringIO()
    call_command("report", *args, stdout=out)
    return out.getvalue()


def task_list(*names: str) -> list[dict]:
    return [{"namespace": NS, "task": f"task:{name}"} for name in names]


def test_the_command_prints_one_json_object(audited):
    assert json.loads(report("--json")) == {
        "namespaces": [NS],
        "tasks_seen": 12,
        "gap_finalizations": {
            "count": 4,
            "share_of_tasks_seen": 0.3333,
            "tasks": task_list("A", "B", "C", "D"),
        },
        "handed_earlier_text": {
            "count": 3,
            "share_of_tasks_seen": 0.25,
            "tasks": task_list("A", "B", "D"),
        },
        "undelivered_result_open": {
            "count": 2,
            "share_of_tasks_seen": 0.1667,
            "tasks": task_list("B", "C"),
        },
        "never_delivered_open": {"count": 0, "share_of_tasks_seen": 0.0, "tasks": []},
        "later_result_delays": {"count": 6, "median_s": 25.0, "p90_s": 600.0},
        "open_flags_by_kind": OPEN_BY_KIND,
    }


def test_the_command_prints_an_aligned_table(audited):
    assert report().split("\n\nopen flags by kind:")[0].splitlines() == [
        "namespaces: orchestrator",
        "",
        "measure                                           value  share of tasks seen",
        "tasks seen                                           12",
        "finalized in the gap before a later run (<= 3 s)      4                33.3%",
        "  handed an earlier run's text                        3                25.0%",
        "undelivered_result open                               2                16.7%",
        "never_delivered open (a starved delivery)             0                 0.0%",
        "later results that reached the parent                 6",
        "  delay, median (s)                                25.0",
        "  delay, p90 nearest rank (s)                     600.0",
    ]


def test_the_command_audits_all_namespaces_or_the_one_named(audited):
    other, _ = do_create_source("other-installation")
    apply_events(other, task_events(0, prefix="o"))
    everything = json.loads(report("--json"))
    assert everything["namespaces"] == [NS, "other-installation"]
    assert everything["tasks_seen"] == 13
    assert everything["gap_finalizations"]["share_of_tasks_seen"] == round(4 / 13, 4)
    assert json.loads(report("--json", "--namespace", "other-installation")) == {
        "namespaces": ["other-installation"],
        "tasks_seen": 1,
        "gap_finalizations": {"count": 0, "share_of_tasks_seen": 0.0, "tasks": []},
        "handed_earlier_text": {"count": 0, "share_of_tasks_seen": 0.0, "tasks": []},
        "undelivered_result_open": {"count": 0, "share_of_tasks_seen": 0.0, "tasks": []},
        "never_delivered_open": {"count": 0, "share_of_tasks_seen": 0.0, "tasks": []},
        "later_result_delays": {"count": 0, "median_s": None, "p90_s": None},
        "open_flags_by_kind": NONE_OPEN,
    }
    assert json.loads(report("--json", "--namespace", NS))["tasks_seen"] == 12


def test_the_command_refuses_an_unknown_namespace(audited):
    with pytest.raises(CommandError, match="no namespace named 'nowhere'"):
        report("--namespace", "nowhere")


def test_the_table_says_what_each_count_means(audited):
    text = reporting.table(reporting.audit_stored())
    table, _, legend = text.partition("\n\nWhat each count means:\n")
    assert legend, text
    for label in ("tasks seen", "finalized in the gap", "handed an earlier run's text",
                  "undelivered_result open", "later results that reached the parent"):  # fmt: skip
        assert any(line.startswith(f"- {label}") for line in legend.splitlines()), label
    # The gap finalization is seed 000's narrow measure, not the stale_result flag.
    assert "stale_result" in legend


def test_the_command_lists_every_kind_with_its_open_flags(audited):
    text = report()
    block = text.split("\n\nopen flags by kind:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split() for line in block] == [
        [kind, str(count)] for kind, count in OPEN_BY_KIND.items()
    ]
    legend = text.split("What each count means:")[1]
    assert "- open flags by kind:" in legend
