"""Jobs: every Celery task and beat entry point, one module per thing they drive. The
layers below enqueue by task name (core/dispatch.py) and never import this package;
celery.py discovers it, which imports every job module."""

from . import evaluation, follow_t3, notifications, operator_actions, retention  # noqa: F401
