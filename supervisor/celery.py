import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supervisor.settings")

app = Celery("supervisor")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Every job lives in supervisor/jobs (importing the package imports each module).
app.autodiscover_tasks(["supervisor"], related_name="jobs")

# The filesystem broker needs its folders before the first message.
for folder in (app.conf.broker_transport_options or {}).values():
    if isinstance(folder, str) and "broker" in folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
