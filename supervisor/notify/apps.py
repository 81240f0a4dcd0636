from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "supervisor.notify"
    label = "notify"
    verbose_name = "Notifications"

    def ready(self):
        # Notify plugs into core, which imports nothing of it: alerts written inside each
        # flag opening's transaction, held alerts due again when a silence lifts, its rows'
        # retention, its figure on /metrics.
        from django.db.models import Q

        from supervisor.core import retention
        from supervisor.core.flags import writers as flags
        from supervisor.core.queries import metrics
        from supervisor.core.triage import silences

        from .grouping import flags_opened, silence_lifted
        from .metrics import notifications_family
        from .models import FlagAlert, Notification

        flags.on_flags_opened(flags_opened)
        silences.on_silence_lifted(silence_lifted)
        retention.register(
            retention.Kind(
                "notifications",
                "notifications",
                Notification,
                "sent_at",
                keep=~Q(state=Notification.SENT),
            ),
            dependent=retention.Dependent("flag_alerts", FlagAlert, "flag"),
        )
        metrics.register(notifications_family)
