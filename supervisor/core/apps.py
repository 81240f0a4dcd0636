from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "supervisor.core"
    label = "core"
    verbose_name = "Supervisor"

    def ready(self):
        from supervisor import var_dir

        from . import checks  # noqa: F401  (registers the system checks)

        var_dir.prepare()  # before anything opens the database or signs
