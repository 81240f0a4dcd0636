"""What orchestrators report (contract §2–3), mirrored: namespaces and the sources that
send events, environments, threads, tasks and their reports, runs, background items,
wakes, tool rejections and task requests, and every event taken in or rejected.

Entities are keyed by (namespace, orchestrator id). Cross-references to other
entities are kept as the orchestrator's id strings, so anything referenced before
it is described needs no placeholder row; threads, which the pages join, get a
placeholder row on first mention. Each `*_event` column names the event that
described that part, which breaks ties (later `at`, then greater event id, wins)
and serves as evidence.
"""

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q

from supervisor.core.contract.source_names import INTERNAL_PREFIX, NAME_LENGTH


class Namespace(models.Model):
    """Where orchestrator ids are unique; the sources of one installation share one."""

    name = models.CharField(max_length=NAME_LENGTH, unique=True)

    def __str__(self):
        return self.name


SOURCE_NAME_LENGTH = len(INTERNAL_PREFIX) + NAME_LENGTH


class Source(models.Model):
    """A sender of events, known by its bearer token (stored hashed)."""

    SCOPES = ("ingest", "read", "act", "metrics")

    # Internal sources are named `supervisor@NAMESPACE`: a namespace's longest name and more.
    name = models.CharField(max_length=SOURCE_NAME_LENGTH, unique=True)
    namespace = models.ForeignKey(Namespace, on_delete=models.PROTECT, related_name="sources")
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=12, help_text="Shown to tell tokens apart.")
    scopes = models.CharField(max_length=100, default="ingest,read")
    settings = models.JSONField(default=dict, blank=True, help_text="Detection overrides.")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    # Events taken in (new, not duplicates) and refused (to the dead letters) since the
    # source was made: counted by ingest in the UPDATE it does per batch, read by /metrics.
    events_accepted = models.BigIntegerField(default=0)
    events_rejected = models.BigIntegerField(default=0)
    # The connector that acts for this source's tasks (supervisor.connectors), and its
    # settings (a webhook's URL and secret, say); "" when nothing can act.
    connector = models.CharField(max_length=40, blank=True, default="")
    connector_settings = models.JSONField(default=dict, blank=True)
    # Supervisor's own source in a namespace: it records deliveries made by hand as
    # events; it has no usable token and is never judged silent.
    internal = models.BooleanField(default=False)

    class Meta:
        permissions = [("administer", "Can manage sources, tokens, users and dead letters")]

    def __str__(self):
        return self.name

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @property
    def scope_set(self) -> frozenset[str]:
        return frozenset(s.strip() for s in self.scopes.split(",") if s.strip())


class Environment(models.Model):
    """A machine events come from; clocks of different environments are not in sync."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    name = models.CharField(max_length=200)
    last_event_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name"], name="environment_unique")
        ]


# md5 of "": the title hash of a task with no title yet (a placeholder row).
EMPTY_MD5 = hashlib.md5(b"").hexdigest()

# A task or thread touched by an event after its last evaluation (or never evaluated
# since one): what evaluation jobs and the sweep look for. Each model keeps these rows
# in a partial index, so finding them costs what is out of date, not what is stored.
OUT_OF_DATE = models.Q(evaluated_at__isnull=True, last_event_at__isnull=False) | models.Q(
    last_event_at__gt=models.F("evaluated_at")
)


class Thread(models.Model):
    # db_index=False: the unique (namespace, id) index leads with it (issue 42).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, db_index=False)
    thread_id = models.CharField(max_length=500)
    title = models.TextField(blank=True, default="")
    parent_thread_id = models.CharField(max_length=500, null=True)
    provider = models.CharField(max_length=200, null=True)
    model = models.CharField(max_length=200, null=True)
    seen_at = models.DateTimeField(null=True)
    seen_event = models.CharField(max_length=200, null=True)
    last_event_at = models.DateTimeField(null=True)
    evaluated_at = models.DateTimeField(null=True)
    next_check_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "thread_id"], name="thread_unique")
        ]
        indexes = [
            models.Index(fields=["next_check_at"], name="thread_due"),
            models.Index(fields=["namespace"], condition=OUT_OF_DATE, name="thread_out_of_date"),
        ]

    def __str__(self):
        return self.title or self.thread_id


class Task(models.Model):
    """A delegated task, with the orchestrator's current view of it kept alongside."""

    # db_index=False: the unique (namespace, id) index leads with it (issue 42).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, db_index=False)
    task_id = models.CharField(max_length=500)
    known = models.BooleanField(default=False, help_text="Its task.delegated has arrived.")
    parent_thread = models.ForeignKey(
        Thread,
        null=True,
        on_delete=models.SET_NULL,
        related_name="delegated_tasks",
        db_index=False,  # task_parent_title_hash leads with it
    )
    child_thread = models.ForeignKey(
        Thread, null=True, on_delete=models.SET_NULL, related_name="child_tasks"
    )
    title = models.TextField(default="")
    # The title as the contract compares it (ownership.normalized), written with it:
    # the same work delegated again is found under its parent by index, never by reading
    # every title there.
    title_key = models.TextField(default="", db_default="")
    # The index's stand-in for title_key (hash_title): a btree row holds about 2,700
    # bytes and a title is as long as its orchestrator wrote it. Queries compare
    # title_key too, so equal titles still match and a collision matches nothing.
    title_hash = models.CharField(max_length=32, default=EMPTY_MD5, db_default=EMPTY_MD5)
    mode = models.CharField(max_length=10, null=True)
    prompt = models.TextField(null=True)
    client_request_id = models.CharField(max_length=500, null=True)
    parent_run_id = models.CharField(max_length=500, null=True)
    target_env = models.CharField(max_length=200, null=True)
    requested_at = models.DateTimeField(null=True)
    follow_up_of = models.CharField(max_length=500, null=True)
    delegated_at = models.DateTimeField(null=True)
    delegated_event = models.CharField(max_length=200, null=True)
    env = models.CharField(max_length=200, null=True)
    # The current report (latest by `at`, then event id), kept here for lists and filters.
    status = models.CharField(max_length=20, null=True)
    work_state = models.CharField(max_length=30, null=True)
    summary = models.TextField(null=True)
    result_run_id = models.CharField(max_length=500, null=True)
    error = models.TextField(null=True)
    pending_child_runs = models.BooleanField(null=True)
    reported_at = models.DateTimeField(null=True)
    report_event = models.CharField(max_length=200, null=True)
    # Detection bookkeeping, on Supervisor's clock: when an event last touched the task,
    # when it was last evaluated, and when a time-based rule needs it looked at again.
    last_event_at = models.DateTimeField(null=True)
    evaluated_at = models.DateTimeField(null=True)
    next_check_at = models.DateTimeField(null=True)
    # Settled when last judged (detection/settled.py): nothing its parent thread does can
    # change its flags, so an event there does not have it judged again.
    settled = models.BooleanField(default=False, db_default=False)
    # Who looks after the task's problem (Sentry's assignee); "owned" is taken by runs.
    # Kept when the problem is resolved: it says who handled it last.
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "task_id"], name="task_unique")]
        indexes = [
            models.Index(fields=["next_check_at"], name="task_due"),
            models.Index(fields=["namespace"], condition=OUT_OF_DATE, name="task_out_of_date"),
            models.Index(fields=["parent_thread", "title_hash"], name="task_parent_title_hash"),
            # The list: newest first with keyset pagination, and its filters.
            models.Index(fields=["-delegated_at", "-id"], name="task_newest"),
            models.Index(fields=["status", "-delegated_at", "-id"], name="task_status_newest"),
            # The list's choice of environments: its distinct values, skipped through.
            models.Index(fields=["target_env"], name="task_target_env"),
        ]

    def __str__(self):
        return self.title or self.task_id

    @staticmethod
    def hash_title(title_key: str) -> str:
        """title_hash: md5, as PostgreSQL's md5() and Django's MD5 write it."""
        return hashlib.md5(title_key.encode()).hexdigest()


class TaskReport(models.Model):
    """Every `task.reported`: the orchestrator's view of the task at a time."""

    # Indexed by report_task_at and report_unique, which lead with them.
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reports", db_index=False)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, db_index=False)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField()
    status = models.CharField(max_length=20)
    work_state = models.CharField(max_length=30, null=True)
    summary = models.TextField(null=True)
    result_run_id = models.CharField(max_length=500, null=True)
    error = models.TextField(null=True)
    pending_child_runs = models.BooleanField(null=True)
    delivery = models.CharField(max_length=10, null=True)
    cause = models.CharField(max_length=10, null=True)  # "restart": ended by a restart
    # The orchestrator's own delivery record then, and its cohort's settled deliveries.
    delivery_record = models.CharField(max_length=20, null=True)
    settled_deliveries = models.IntegerField(null=True)
    failure_class = models.CharField(max_length=40, null=True)  # the orchestrator's, as sent

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "event_id"], name="report_unique")]
        indexes = [models.Index(fields=["task", "at"], name="report_task_at")]


class Run(models.Model):
    # db_index=False: the unique (namespace, id) index leads with it (issue 42).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, db_index=False)
    run_id = models.CharField(max_length=500)
    # Indexed by run_thread_ordinal, which leads with it.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="runs", db_index=False
    )
    ordinal = models.IntegerField(null=True)
    trigger_kind = models.CharField(max_length=20, null=True)
    trigger_ref = models.CharField(max_length=500, null=True)
    requested_at = models.DateTimeField(null=True)
    started_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    status = models.CharField(max_length=20, null=True)
    summary = models.TextField(null=True)
    error = models.TextField(null=True)
    finish_cause = models.CharField(max_length=10, null=True)  # "restart": cut by a restart
    failure_class = models.CharField(max_length=40, null=True)  # the orchestrator's, as sent
    last_activity_at = models.DateTimeField(null=True)
    env = models.CharField(max_length=200, null=True)
    requested_event = models.CharField(max_length=200, null=True)
    started_event = models.CharField(max_length=200, null=True)
    finished_event = models.CharField(max_length=200, null=True)
    activity_event = models.CharField(max_length=200, null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "run_id"], name="run_unique")]
        indexes = [
            models.Index(fields=["thread", "ordinal"], name="run_thread_ordinal"),
            # A task's first run by the task: its child thread while none is named.
            models.Index(
                fields=["namespace", "trigger_ref"],
                name="run_first_run",
                condition=models.Q(trigger_kind="delegation"),
            ),
        ]


class BackgroundItem(models.Model):
    # db_index=False: the unique (namespace, id) index leads with it (issue 42).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, db_index=False)
    item_id = models.CharField(max_length=500)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="background_items")
    kind = models.CharField(max_length=20, null=True)
    run_id = models.CharField(max_length=500, null=True)
    label = models.TextField(null=True)
    awaited = models.BooleanField(null=True)
    started_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    finish_status = models.CharField(max_length=20, null=True)
    env = models.CharField(max_length=200, null=True)
    started_event = models.CharField(max_length=200, null=True)
    finished_event = models.CharField(max_length=200, null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "item_id"], name="item_unique")]


class Wake(models.Model):
    """A notification queued for a thread, which wakes it."""

    # db_index=False: the unique (namespace, id) index leads with it (issue 42).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, db_index=False)
    wake_id = models.CharField(max_length=500)
    thread = models.ForeignKey(Thread, null=True, on_delete=models.CASCADE, related_name="wakes")
    source_kind = models.CharField(max_length=20, null=True)
    source_task = models.CharField(max_length=500, null=True)
    source_thread = models.CharField(max_length=500, null=True)
    source_item = models.CharField(max_length=500, null=True)
    summary = models.TextField(null=True)
    outcome = models.CharField(max_length=20, null=True)
    queued_at = models.DateTimeField(null=True)
    delivered_at = models.DateTimeField(null=True)
    delivered_run = models.CharField(max_length=500, null=True)
    env = models.CharField(max_length=200, null=True)
    queued_event = models.CharField(max_length=200, null=True)
    delivered_event = models.CharField(max_length=200, null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "wake_id"], name="wake_unique")]
        indexes = [
            models.Index(fields=["namespace", "source_task"], name="wake_source_task"),
            models.Index(fields=["namespace", "source_thread"], name="wake_source_thread"),
        ]


class ToolRejection(models.Model):
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="rejections")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, db_index=False)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField()
    tool = models.CharField(max_length=200)
    code = models.CharField(max_length=200)
    message = models.TextField()
    caller = models.CharField(max_length=30, null=True)
    env = models.CharField(max_length=200, null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "event_id"], name="rejection_unique")
        ]


class TaskRequest(models.Model):
    """One `task.requested` event (issue 31): a parent asked to delegate a task, with the
    id its `task.delegated` will carry. Kept per event, as rejections are: duplicates
    share a (source, event id), and the rule reads the earliest of a request id."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    parent_thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="requests")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, db_index=False)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField()
    client_request_id = models.CharField(max_length=500)
    parent_run = models.CharField(max_length=500, null=True)
    title = models.TextField(null=True)
    env = models.CharField(max_length=200, null=True)
    # Kept by ingest (core.ingest.answered_requests): a known task of the parent thread
    # carries this request id. The rule reads only the requests not answered.
    answered = models.BooleanField(default=False, db_default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "event_id"], name="task_request_unique")
        ]
        indexes = [
            models.Index(
                fields=["parent_thread"], condition=Q(answered=False), name="task_request_open"
            )
        ]


class IngestedEvent(models.Model):
    """Every accepted event, raw, once per (source, id): the first one wins."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, db_index=False)
    event_id = models.CharField(max_length=200)
    type = models.CharField(max_length=40)
    at = models.DateTimeField()
    env = models.CharField(max_length=200)
    data = models.JSONField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "event_id"], name="event_unique")]


class DeadLetter(models.Model):
    """A rejected event, kept raw so an operator can fix and replay it: nothing is lost."""

    source = models.ForeignKey(Source, null=True, on_delete=models.SET_NULL)
    event_id = models.CharField(max_length=200, null=True)
    body = models.TextField()
    error = models.TextField()
    received_at = models.DateTimeField(auto_now_add=True)
    replayed_at = models.DateTimeField(null=True)
    replay_error = models.TextField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["-received_at"], name="deadletter_newest"),
            # The ones still to fix, per source (/metrics counts them): small by nature.
            models.Index(
                fields=["source"], name="deadletter_unreplayed", condition=Q(replayed_at=None)
            ),
        ]
