"""The mirror of what orchestrators report (contract §2–3) and what Supervisor concludes.

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
from django.utils import timezone

from supervisor.core.contract.connectors import action_wake, sent_key
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
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
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

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    task_id = models.CharField(max_length=500)
    known = models.BooleanField(default=False, help_text="Its task.delegated has arrived.")
    parent_thread = models.ForeignKey(
        Thread, null=True, on_delete=models.SET_NULL, related_name="delegated_tasks"
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

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reports")
    source = models.ForeignKey(Source, on_delete=models.CASCADE)
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
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    run_id = models.CharField(max_length=500)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
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
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
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

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
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
    source = models.ForeignKey(Source, on_delete=models.CASCADE)
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
    source = models.ForeignKey(Source, on_delete=models.CASCADE)
    event_id = models.CharField(max_length=200)
    at = models.DateTimeField()
    client_request_id = models.CharField(max_length=500)
    parent_run = models.CharField(max_length=500, null=True)
    title = models.TextField(null=True)
    env = models.CharField(max_length=200, null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "event_id"], name="task_request_unique")
        ]


class IngestedEvent(models.Model):
    """Every accepted event, raw, once per (source, id): the first one wins."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE)
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


class SweepFailure(models.Model):
    """A subject (task, thread, flag alert) or a step of a sweep that raised when it was
    last tried. The rest of the sweep went on; this one is tried again with backoff,
    shown to admins (/admin/failures/) and counted by /metrics, and the row goes when
    it next works."""

    job = models.CharField(max_length=40)  # sweep | notify_sweep
    subject_type = models.CharField(max_length=10)  # task | thread | alert | step
    subject_id = models.CharField(max_length=500)
    namespace = models.ForeignKey(Namespace, null=True, on_delete=models.CASCADE)
    # One row per (job, subject type, namespace, subject): nulls do not collide in a key.
    key = models.CharField(max_length=600, unique=True)
    error = models.TextField()  # its type and message, one line
    traceback = models.TextField()
    failures = models.IntegerField(default=1)  # in a row, since first_failed_at
    first_failed_at = models.DateTimeField()
    last_failed_at = models.DateTimeField()
    retry_at = models.DateTimeField()  # not tried again before


class Flag(models.Model):
    """One opening of a flag kind on a subject, kept with its history."""

    OPEN, RESOLVED = "open", "resolved"

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE)
    subject_type = models.CharField(max_length=10)  # task | thread | source
    subject_id = models.CharField(max_length=500)
    task = models.ForeignKey(Task, null=True, on_delete=models.CASCADE, related_name="flags")
    kind = models.CharField(max_length=40)
    state = models.CharField(max_length=10, default=OPEN)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolve_reason = models.TextField(null=True)
    acknowledged_at = models.DateTimeField(null=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    snoozed_until = models.DateTimeField(null=True)
    evidence = models.JSONField(default=dict)
    # Resolved by an operator while its condition held: not reopened until the
    # condition has stopped holding and holds again (contract §5).
    suppressed = models.BooleanField(default=False)

    class Meta:
        constraints = [
            # Two workers never open the same flag twice.
            models.UniqueConstraint(
                fields=["namespace", "subject_type", "subject_id", "kind"],
                condition=Q(state="open"),
                name="flag_one_open",
            )
        ]
        indexes = [
            models.Index(fields=["state", "kind"], name="flag_state_kind"),
            models.Index(fields=["namespace", "subject_type", "subject_id"], name="flag_subject"),
        ]


class Action(models.Model):
    """An operator's request to cancel, continue or deliver; performed by a worker.

    The row is the record: a worker claims it (queued -> sending, with a lease), calls
    the connector with the idempotency key, and records the outcome; the sweep
    re-enqueues what is left queued or sending past its time."""

    KINDS = ("cancel", "continue", "deliver")
    QUEUED, SENDING, SUCCEEDED, FAILED = "queued", "sending", "succeeded", "failed"
    STATES = (QUEUED, SENDING, SUCCEEDED, FAILED)

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="actions")
    # The task's: an idempotency key is unique within it (another namespace's is not a reuse).
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10)
    # deliver: the run whose result is sent; cancel: the child run to stop (if known).
    run_id = models.CharField(max_length=500, null=True)
    message = models.TextField(null=True, help_text="The operator's own words, if any.")
    text = models.TextField(null=True, help_text="The exact text sent to the thread.")
    target_thread_id = models.CharField(max_length=500, null=True)
    source = models.ForeignKey(
        Source, null=True, on_delete=models.SET_NULL, related_name="+", help_text="Acts for it."
    )
    reason = models.TextField(null=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # user:NAME | source:NAME, whatever the length of the name.
    actor_name = models.CharField(max_length=len("source:") + SOURCE_NAME_LENGTH, default="")
    idempotency_key = models.CharField(max_length=200)
    # The id of the preview (or bulk selection) this action confirms, and the
    # Idempotency-Key of the bulk request that asked for it: the same confirmation sent
    # again, or at once, is the same request (issue 39).
    confirms = models.CharField(max_length=32, null=True)
    bulk_key = models.CharField(max_length=200, null=True)
    # Sent as it is, not behind its namespace's mark (`sent_key`): the actions made before
    # migration 0027, so that one still in flight keeps the key it was first sent with.
    bare_key = models.BooleanField(default=False)
    state = models.CharField(max_length=10, default=QUEUED)
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(null=True)
    response = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # queued: when the sweep should enqueue it (again); sending: when its lease ends.
    due_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True)

    class Meta:
        permissions = [("act", "Can cancel, continue and deliver, and act on flags")]
        constraints = [
            # At most one delivery of a run in flight or done: a double click, two
            # operators and a sweep retry still send once; a failed one may be retried.
            models.UniqueConstraint(
                fields=["task", "run_id"],
                condition=Q(kind="deliver", state__in=["queued", "sending", "succeeded"]),
                name="action_one_delivery",
            ),
            models.UniqueConstraint(
                fields=["namespace", "idempotency_key"], name="action_key_per_namespace"
            ),
            # One action per task for a preview confirmed, or a bulk key, however many
            # times or at once it is sent (NULLs are distinct: no preview, no limit).
            models.UniqueConstraint(fields=["task", "confirms"], name="action_one_per_preview"),
            models.UniqueConstraint(fields=["task", "bulk_key"], name="action_one_per_bulk_key"),
        ]
        indexes = [models.Index(fields=["state", "due_at"], name="action_due")]

    @property
    def sent_key(self) -> str:
        """The key every send of the action carries: its namespace's (connectors.sent_key)."""
        if self.bare_key:
            return self.idempotency_key
        return sent_key(self.namespace_id, self.idempotency_key)

    @property
    def wake(self) -> str | None:
        """The manual wake a deliver or continue is recorded as and sent with."""
        return action_wake(self.kind, self.pk, self.sent_key)


class Change(models.Model):
    """The ordered log of state changes: the outbox live pages follow."""

    at = models.DateTimeField(auto_now_add=True)
    namespace = models.ForeignKey(Namespace, null=True, on_delete=models.CASCADE)
    kind = models.CharField(max_length=40)  # task.updated, flag.opened, ...
    subject_type = models.CharField(max_length=10)
    subject_id = models.CharField(max_length=500)
    payload = models.JSONField(default=dict)


class FollowState(models.Model):
    """Where a follower of an orchestrator's own database stands (T3 Code's state file):
    the last row read, what it remembers of the entities it diffs against, which file that
    was, and what it could not understand. Saved in the ingest's transaction, so a crash
    never loses or doubles a row."""

    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="follow_state")
    # The last `sequence` read (0: none); rows after it are still to be read.
    position = models.BigIntegerField(default=0)
    # The entities as last seen (statuses, rosters, texts): each row is diffed against it.
    memory = models.JSONField(default=dict)
    # The file followed and how to know it again: a replaced file is imported afresh.
    db_path = models.TextField(default="")
    db_inode = models.BigIntegerField(null=True)
    # Text, not a bounded column: T3's event ids nest encoded ids and run past 300
    # characters on a real install (PostgreSQL refused them; SQLite does not check).
    db_marker = models.TextField(default="")
    # The id of the row at `position`: another there means the log was rewritten.
    last_event_id = models.TextField(default="")
    imported_at = models.DateTimeField(null=True)
    imports = models.IntegerField(default=0)
    rows_read = models.BigIntegerField(default=0)
    # Rows with nothing for Supervisor (older versions' rows, types it does not map).
    rows_skipped = models.BigIntegerField(default=0)
    # Rows, values and columns not understood: counted by name in `unknown`, never fatal.
    rows_unknown = models.BigIntegerField(default=0)
    values_unknown = models.BigIntegerField(default=0)
    unknown = models.JSONField(default=dict)
    events_sent = models.BigIntegerField(default=0)
    last_error = models.TextField(default="", blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.source} at {self.position}"


class SavedView(models.Model):
    """A named task-list filter: the list's query string, checked by the list's own
    filter parsing when saved. Private to its owner, or shared with every user."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    query = models.TextField()
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="saved_view_name_per_owner")
        ]
        indexes = [models.Index(fields=["shared"], name="saved_view_shared")]

    def __str__(self):
        return self.name


class Silence(models.Model):
    """Flags matched by kind, source, environment and title words kept open but quiet
    until `ends_at`, as Alertmanager's silences: not needing action, no alerts. An empty
    matcher matches anything; at least one is set (core.silences checks it). Ending one
    early sets `ended_at` and brings `ends_at` back to then: active is `ends_at > now`."""

    kinds = models.JSONField(default=list)
    sources = models.JSONField(default=list)  # source names: flags of their namespaces
    environments = models.JSONField(default=list)  # the task's target env, else its env
    title_words = models.JSONField(default=list)  # each one in the task's title
    reason = models.TextField()
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [models.Index(fields=["ends_at"], name="silence_ends_at")]

    def __str__(self):
        return f"silence #{self.pk}"
