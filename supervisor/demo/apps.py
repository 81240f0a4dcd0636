from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "supervisor.demo"
    label = "demo"
    verbose_name = "Demo fleet"
