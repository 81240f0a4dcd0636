from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "supervisor.web"
    label = "web"

    def ready(self):
        from supervisor import checks  # noqa: F401  (registers the system checks)
