from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "supervisor.notify"
    label = "notify"
    verbose_name = "Notifications"
