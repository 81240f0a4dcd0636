"""What Supervisor concludes and keeps of its own: sweep failures, flags, operators'
actions, the change log, where a follower of an orchestrator's database stands, saved
views and silences."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from supervisor.core.contract.connectors import action_wake, sent_key
from supervisor.core.models.reported import SOURCE_NAME_LENGTH, Namespace, Source, Task


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
