"""Properties of the timed kinds (cancel_not_propagated, silent_background_item) and
of stuck's idle clock beside them, over random task families: what is open changes only
at the due times the rules give, and the evidence names only what the condition reads."""

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from supervisor.core.rules import cancel_not_propagated, silent_background_item, stuck
from tests.support.snapshots import (
    CHILD,
    SETTINGS,
    TASK,
    at,
    item,
    report,
    run,
    snapshot,
    task,
    wake,
)

RULES = (cancel_not_propagated, silent_background_item, stuck)
SECONDS = st.integers(0, 6000)


@st.composite
def families(draw):
    """A task, its first run, maybe a second run (a restart, a continue by hand or a
    follow-up), an item of run 1, a sub-task and a progress wake to the child."""
    status = draw(st.sampled_from(["running", "waiting", "cancelled", "completed"]))
    cause = draw(st.sampled_from([None, None, "restart"]))
    reported = draw(SECONDS)
    views = [task(reports=[report(status, reported, cause=cause)])]

    def maybe_end(start):
        return draw(st.one_of(st.none(), st.integers(start, start + 6000)))

    views.append(run("r1", 1, finished=maybe_end(0), activity=draw(st.none() | SECONDS)))
    second = draw(st.sampled_from([None, "restart", "manual", "message"]))
    if second is not None:
        requested = draw(SECONDS)
        trigger = {
            "restart": ("restart", "r1"),
            "manual": ("wake", "w-continue"),
            "message": ("message", None),
        }[second]
        if second == "manual":
            views.append(wake("w-continue", to=CHILD, source=("manual", TASK), queued=requested))
        views.append(
            run("r2", 2, trigger=trigger, requested=requested, finished=maybe_end(requested))
        )
    if draw(st.booleans()):
        started = draw(SECONDS)
        awaited = draw(st.sampled_from([None, True, False]))
        runs = ["r1", "r2"] if second is not None else ["r1"]
        views.append(
            item(
                "i1",
                run=draw(st.sampled_from(runs)),
                started=started,
                finished=maybe_end(started),
                awaited=awaited,
            )
        )
    if draw(st.booleans()):
        delegated = draw(SECONDS)
        ended = draw(st.none() | st.integers(delegated, delegated + 6000))
        views.append(
            task(
                "task:sub",
                parent=CHILD,
                child="thread:sub",
                parent_run="r1",
                delegated=delegated,
                reports=[report("completed", ended)] if ended is not None else [],
            )
        )
    if draw(st.booleans()):
        views.append(
            wake(
                "w-progress",
                to=CHILD,
                source=("background", "i1"),
                queued=draw(SECONDS),
                delivered=None,
                outcome="updated",
            )
        )
    return views


def opened(rule, snap, when):
    """T's finding of `rule` at `when`, by its words (the sub-task is judged too)."""
    return {f.evidence["text"] for f in rule.findings(snap, SETTINGS, when) if f.subject_id == TASK}


@given(families(), SECONDS)
def test_what_is_open_changes_only_at_the_due_time(views, now_s):
    snap = snapshot(*views)
    now = at(now_s)
    for rule in RULES:
        before = opened(rule, snap, now)
        due = rule.due_times(snap, SETTINGS, now).get(("task", TASK))
        if due is None:
            assert opened(rule, snap, now + timedelta(days=365)) == before, rule.KIND
            continue
        assert due > now
        assert opened(rule, snap, due - timedelta(microseconds=1)) == before, rule.KIND
        assert opened(rule, snap, due) != before, rule.KIND


@given(families(), SECONDS)
def test_the_evidence_names_only_unfinished_work(views, now_s):
    snap = snapshot(*views)
    for finding in cancel_not_propagated.findings(snap, SETTINGS, at(now_s)):
        report_view = snap.tasks[TASK].current_report
        assert report_view.status == "cancelled" and report_view.cause != "restart"
        assert at(now_s) >= report_view.at + timedelta(seconds=SETTINGS.cancel_grace)
        assert all(not snap.runs[r].finished for r in finding.evidence["runs"])
        assert all(not snap.items[i].finished for i in finding.evidence["items"])
        # A continue by hand after the cancel is the operator's: never named.
        r2 = snap.runs.get("r2")
        if r2 is not None and r2.trigger_kind == "wake" and r2.requested_at > report_view.at:
            assert "r2" not in finding.evidence["runs"]
    for finding in silent_background_item.findings(snap, SETTINGS, at(now_s)):
        assert not snap.tasks[TASK].current_report.terminal
        for name in finding.evidence["items"]:
            assert not snap.items[name].finished and snap.items[name].awaited is not False


@given(families(), SECONDS)
def test_stuck_never_opens_before_a_silent_item_would_have(views, now_s):
    """While an awaited item is open and its thread not yet silent, the item stops the
    idle clock: stuck cannot be open for idleness then."""
    snap = snapshot(*views)
    now = at(now_s)
    silent = silent_background_item.findings(snap, SETTINGS, now)
    waiting = silent_background_item.due_times(snap, SETTINGS, now)
    if not silent and waiting:
        for finding in stuck.findings(snap, SETTINGS, now):
            assert "idle_since" not in finding.evidence
