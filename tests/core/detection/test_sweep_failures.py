"""No bad subject stops the sweep: a subject whose evaluation raises is recorded (the
subject, the traceback, since when), left out while it backs off, and every other
subject and every step of the sweep goes on, in every namespace."""

from datetime import timedelta

import pytest
import time_machine
from django.urls import reverse

from supervisor.core import clock
from supervisor.core.access.sources import do_create_source
from supervisor.core.contract.events import parse_event
from supervisor.core.detection import sweep as sweep_module
from supervisor.core.detection.evaluate import evaluate
from supervisor.core.detection.sweep import sweep
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Flag, Source, SweepFailure, Task
from supervisor.core.queries.metrics import collect
from supervisor.core.rules import late_wake, stuck
from tests.support.cast import login_as
from tests.support.factories import BASE, make_tasks, task_events
from tests.support.scenarios import CONTRACT_SCENARIOS, load_scenario

pytestmark = pytest.mark.django_db

SEED000 = load_scenario(next(p for p in CONTRACT_SCENARIOS if "seed000" in p.name))["events"]
STALE = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
BAD = "task:t1"
NOW = BASE + timedelta(hours=2)


class BadSubject:
    """A rule that raises whenever it judges `subject` (BAD), as a rule would on data it
    chokes on; `broken = False` mends it."""

    def __init__(self, real, subject=BAD):
        self.real, self.subject, self.broken, self.tries = real, subject, True, 0

    def findings(self, snap, settings, now):
        if self.broken and self.subject in getattr(snap, "judged", snap.tasks):
            self.tries += 1
            raise RuntimeError(f"cannot make sense of {self.subject}")
        return self.real(snap, settings, now)


@pytest.fixture
def bad_subject(monkeypatch):
    bad = BadSubject(stuck.findings)
    monkeypatch.setattr(stuck, "findings", bad.findings)
    return bad


@pytest.fixture
def fleet(db):
    """Two namespaces of tasks nobody has evaluated yet; BAD is in the first."""
    first, _ = do_create_source("first", scopes="ingest,read,act")
    second, _ = do_create_source("second", scopes="ingest,read,act")
    with time_machine.travel(BASE, tick=False):
        make_tasks(first, 3)
        apply_events(second, SEED000)
    return first, second


def sweep_at(when):
    with time_machine.travel(when, tick=False):
        return sweep(clock.now())


def test_a_subject_that_raises_is_recorded_and_the_rest_is_judged(fleet, bad_subject):
    sweep_at(NOW)
    failure = SweepFailure.objects.get()
    assert (failure.job, failure.subject_type, failure.subject_id) == ("sweep", "task", BAD)
    assert failure.namespace.name == "first" and failure.failures == 1
    assert failure.error == f"RuleFailed: stuck: RuntimeError: cannot make sense of {BAD}"
    assert "Traceback" in failure.traceback and "findings" in failure.traceback
    assert failure.first_failed_at == NOW and failure.retry_at > NOW
    # Everything else was judged, in both namespaces; BAD too, but for the rule that
    # raised, and it is due again (held back while its failure backs off).
    bad = Task.objects.get(task_id=BAD)
    assert bad.evaluated_at == NOW and bad.next_check_at == NOW
    assert Task.objects.exclude(task_id=BAD).filter(evaluated_at=None, known=True).count() == 0
    assert Flag.objects.filter(subject_id=STALE, kind="premature_completion").exists()


def test_the_steps_after_the_subjects_still_run(fleet, bad_subject):
    quiet, _ = do_create_source("quiet")  # one task still open, and an hour of silence
    apply_events(quiet, [task_events(0, prefix="q")[0]])
    Source.objects.filter(pk=quiet.pk).update(last_event_at=NOW - timedelta(hours=1))
    task = Task.objects.get(task_id=STALE)
    lost = Action.objects.create(
        task=task,
        namespace_id=task.namespace_id,
        kind="cancel",
        idempotency_key="lost",
        state="sending",
        due_at=NOW,
    )
    sweep_at(NOW + timedelta(seconds=1))
    assert Flag.objects.filter(kind="source_silent", subject_id="quiet", state="open").exists()
    lost.refresh_from_db()
    assert lost.state == "queued" and lost.due_at > NOW  # put back for a worker


def test_a_failing_subject_waits_out_its_backoff_then_is_forgotten_when_it_works(
    fleet, bad_subject
):
    sweep_at(NOW)
    tries = bad_subject.tries
    retry_at = SweepFailure.objects.get().retry_at
    sweep_at(NOW + timedelta(seconds=5))  # the next sweep leaves it out
    assert bad_subject.tries == tries
    sweep_at(retry_at)  # tried again, fails again: counted, backed off longer
    again = SweepFailure.objects.get()
    assert again.failures == 2 and again.first_failed_at == NOW
    assert again.retry_at - retry_at > retry_at - NOW
    bad_subject.broken = False
    sweep_at(again.retry_at)
    assert not SweepFailure.objects.exists()
    assert Task.objects.get(task_id=BAD).evaluated_at == again.retry_at


def test_a_step_that_raises_is_recorded_and_the_next_step_runs(fleet, monkeypatch):
    def broken(now):
        raise ValueError("the silence step broke")

    monkeypatch.setattr(sweep_module, "evaluate_sources", broken)
    task = Task.objects.get(task_id=STALE)
    lost = Action.objects.create(
        task=task,
        namespace_id=task.namespace_id,
        kind="cancel",
        idempotency_key="lost",
        state="queued",
        due_at=NOW,
    )
    sweep_at(NOW + timedelta(seconds=1))
    failure = SweepFailure.objects.get(subject_type="step")
    assert failure.subject_id == "broken" and "silence step broke" in failure.error
    lost.refresh_from_db()
    assert lost.due_at > NOW  # requeue_due_actions ran after it


def test_admins_see_each_failure_and_metrics_count_them(client, fleet, bad_subject):
    sweep_at(NOW)
    login_as(client, "admin")
    html = client.get(reverse("web:admin-failures")).content.decode()
    task = Task.objects.get(task_id=BAD)
    assert reverse("web:task-detail", args=[task.pk]) in html
    assert "cannot make sense of" in html and "Traceback" in html
    families = {f.name: f for f in collect(NOW)}
    samples = dict(
        ((labels["job"], labels["subject"]), n)
        for labels, n in families["supervisor_sweep_failures"].samples
    )
    assert samples[("sweep", "task")] == 1 and samples[("notify_sweep", "alert")] == 0


def test_a_failing_subject_judged_since_by_an_evaluation_job_is_forgotten(fleet, bad_subject):
    sweep_at(NOW)
    bad_subject.broken = False
    task = Task.objects.get(task_id=BAD)
    evaluate(task.namespace_id, NOW + timedelta(seconds=1), tasks=[BAD])  # an ingest's job
    sweep_at(NOW + timedelta(seconds=2))
    assert not SweepFailure.objects.exists()


def test_a_stale_tasks_three_flags_resolve_after_delivery_though_one_rule_raises(
    source, monkeypatch
):
    """A subject whose evaluation raised kept its open flags for ever (a wake
    at 9999 broke late_wake). A rule that raises now leaves only its own kind as it
    was; the other kinds move."""
    choking = BadSubject(late_wake.findings, STALE)
    choking.broken = False
    monkeypatch.setattr(late_wake, "findings", choking.findings)
    last = max(parse_event(e).at for e in SEED000)
    with time_machine.travel(last, tick=False):
        apply_events(source, SEED000)
    sweep_at(last + timedelta(minutes=5))
    stale = Flag.objects.filter(subject_id=STALE, state="open")
    kinds = {"premature_completion", "stale_result", "undelivered_result"}
    assert set(stale.values_list("kind", flat=True)) == kinds

    choking.broken = True  # from here on, late_wake chokes on the task
    delivered = last + timedelta(minutes=6)
    with time_machine.travel(delivered, tick=False):
        apply_events(source, delivery_of_the_latest_result(delivered))
    sweep_at(delivered)
    assert not stale.exists()
    assert set(Flag.objects.filter(subject_id=STALE).values_list("kind", flat=True)) == kinds
    failure = SweepFailure.objects.get()
    assert (failure.subject_type, failure.subject_id) == ("task", STALE)
    assert failure.error == f"RuleFailed: late_wake: RuntimeError: cannot make sense of {STALE}"
    assert "Traceback" in failure.traceback and "findings" in failure.traceback


def delivery_of_the_latest_result(when) -> list[dict]:
    """A task wake to the parent with run 4's text, and its delivery."""
    stamp = when.isoformat()
    latest = "All checks green, both reviews addressed. PR #812 is ready to merge."
    source = {"kind": "task", "task": STALE, "thread": "thread:delegated-task:retry-port"}
    return [
        {
            "id": "deliver-q",
            "type": "wake.queued",
            "at": stamp,
            "data": {
                "wake": "w:deliver",
                "thread": "thread:parent-release",
                "source": source,
                "summary": latest,
            },
        },
        {"id": "deliver-d", "type": "wake.delivered", "at": stamp, "data": {"wake": "w:deliver"}},
    ]
