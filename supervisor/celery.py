import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supervisor.settings")

app = Celery("supervisor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["supervisor.core", "supervisor.connectors.t3code", "supervisor.notify"])
