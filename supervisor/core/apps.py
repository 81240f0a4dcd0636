from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "supervisor.core"
    label = "core"
    verbose_name = "Supervisor"

    def ready(self):
        from supervisor.core import var_dir

        var_dir.prepare()  # before anything opens the database or signs
