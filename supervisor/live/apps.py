from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "supervisor.live"
    label = "live"

    def ready(self):
        # In every process (web, workers, commands): any of them may end a session.
        from . import signals

        signals.connect()
