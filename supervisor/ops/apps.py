from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "supervisor.ops"
    label = "ops"
    verbose_name = "Operations"
