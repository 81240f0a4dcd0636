"""Where alerts go (Channel), which flags go there (Route), what each flag owes each
route (FlagAlert), and the outbox of messages to send (Notification)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.db import models
from django.db.models import Q
from django.utils import timezone

from supervisor.core.flags import kinds as flag_kinds
from supervisor.core.models import Flag


class Channel(models.Model):
    """An Apprise URL or a list of email addresses; the target is a secret (it holds
    tokens and passwords), so pages show `masked()` only."""

    APPRISE, EMAIL = "apprise", "email"
    KINDS = (APPRISE, EMAIL)

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=10, choices=[(k, k) for k in KINDS])
    target = models.TextField(help_text="An Apprise URL, or comma-separated email addresses.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.name

    def addresses(self) -> list[str]:
        return [a.strip() for a in self.target.split(",") if a.strip()]

    def masked(self) -> str:
        """Scheme and host only (`ntfy://ntfy.example…`); paths, users and query
        strings carry tokens."""
        if self.kind == self.EMAIL:
            domains = sorted({a.rpartition("@")[2] for a in self.addresses()})
            return "email to …@" + ", …@".join(domains) if domains else "email"
        parts = urlsplit(self.target)
        host = parts.hostname or ""
        return f"{parts.scheme}://{host}…" if parts.scheme else "…"


class Route(models.Model):
    """Which flags go to a channel (empty list = all), when not, and how they follow
    up: grouped within `group_window`, re-sent every `renotify_every` while open and
    unacknowledged, escalated to `escalate_to` after `escalate_after`."""

    WARNING, CRITICAL = flag_kinds.WARNING, flag_kinds.CRITICAL

    name = models.CharField(max_length=200, blank=True, default="")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="routes")
    kinds = models.JSONField(default=list, blank=True)
    sources = models.JSONField(default=list, blank=True)
    environments = models.JSONField(default=list, blank=True)
    min_severity = models.CharField(
        max_length=10, default=WARNING, choices=[(WARNING, WARNING), (CRITICAL, CRITICAL)]
    )
    quiet_start = models.TimeField(null=True, blank=True)
    quiet_end = models.TimeField(null=True, blank=True)
    quiet_tz = models.CharField(max_length=64, default="UTC")
    group_window = models.PositiveIntegerField(default=30)
    renotify_every = models.PositiveIntegerField(null=True, blank=True)
    escalate_after = models.PositiveIntegerField(null=True, blank=True)
    escalate_to = models.ForeignKey(
        Channel, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    enabled = models.BooleanField(default=True)

    def __str__(self):
        return self.name or f"route {self.pk} → {self.channel}"


class FlagAlert(models.Model):
    """What one flag opening owes one route: a first message when the group window
    closes, then re-notifications and one escalation while it stays open and
    unacknowledged. Written in the flag opening's own transaction, so no opening is lost."""

    WAITING, NOTIFIED, DROPPED, CLOSED = "waiting", "notified", "dropped", "closed"

    flag = models.ForeignKey(Flag, on_delete=models.CASCADE, related_name="alerts")
    route = models.ForeignKey(Route, on_delete=models.CASCADE, related_name="alerts")
    state = models.CharField(max_length=10, default=WAITING)
    # waiting: when the group window closes.
    due_at = models.DateTimeField()
    notified_at = models.DateTimeField(null=True)
    renotify_at = models.DateTimeField(null=True)
    renotified = models.PositiveIntegerField(default=0)
    escalate_at = models.DateTimeField(null=True)
    escalated_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["flag", "route"], name="alert_once")]
        indexes = [
            models.Index(fields=["state", "due_at"], name="alert_due"),
            models.Index(fields=["state", "renotify_at"], name="alert_renotify"),
            models.Index(fields=["state", "escalate_at"], name="alert_escalate"),
        ]


class Notification(models.Model):
    """The outbox: one row per message, sent at least once by a worker. `key` is stable
    per message, so the outbox never writes a message twice and receivers can drop
    repeats. A failed send stays `failing` and is retried with backoff, a bounded number
    of times; a message that cannot be sent (a permanent error), or whose attempts are
    spent, is `failed` with its reason in `last_error`, until an admin sends it again."""

    OPENED, GROUPED, RENOTIFY, ESCALATION, TEST = (
        "opened",
        "grouped",
        "renotify",
        "escalation",
        "test",
    )
    PENDING, SENDING, SENT, FAILING, FAILED = "pending", "sending", "sent", "failing", "failed"

    key = models.CharField(max_length=200, unique=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=12)
    flags = models.JSONField(default=list)  # flag pks
    subject = models.TextField()
    body = models.TextField()  # already redacted
    state = models.CharField(max_length=10, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(null=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # pending/failing: when the sweep should enqueue it (again); sending: lease end.
    due_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "due_at"], name="notification_due"),
            models.Index(
                fields=["-created_at"], name="notification_unsent", condition=~Q(state="sent")
            ),
        ]
