import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supervisor.settings")

app = Celery("supervisor")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every job lives in supervisor/jobs (importing the package imports each module).
app.autodiscover_tasks(["supervisor"], related_name="jobs")
