from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "supervisor.connectors"
    label = "connectors"
    verbose_name = "Connectors"

    def ready(self):
        # Core's connector port knows only what is registered here.
        from supervisor.core.contract.connectors import register

        from .t3code.connector import T3CodeConnector
        from .webhook.connector import WebhookConnector

        register(T3CodeConnector)
        register(WebhookConnector)
