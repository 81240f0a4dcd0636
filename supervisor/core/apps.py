from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "supervisor.core"
    label = "core"
    verbose_name = "Supervisor"
