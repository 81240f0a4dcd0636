"""The models: the mirror of what orchestrators report (contract §2–3, `reported.py`) and
what Supervisor concludes and keeps of its own (`supervision.py`). Every model is
imported from here (`from supervisor.core.models import Task`), in the order they were
always defined.

Imports only the contract and core's foundations."""

from supervisor.core.models.reported import (
    EMPTY_MD5,
    OUT_OF_DATE,
    SOURCE_NAME_LENGTH,
    BackgroundItem,
    DeadLetter,
    Environment,
    IngestedEvent,
    Namespace,
    Run,
    Source,
    Task,
    TaskReport,
    TaskRequest,
    Thread,
    ToolRejection,
    Wake,
)
from supervisor.core.models.supervision import (
    Action,
    Change,
    Flag,
    FollowState,
    SavedView,
    Silence,
    SweepFailure,
)

__all__ = [
    "EMPTY_MD5",
    "OUT_OF_DATE",
    "SOURCE_NAME_LENGTH",
    "Action",
    "BackgroundItem",
    "Change",
    "DeadLetter",
    "Environment",
    "Flag",
    "FollowState",
    "IngestedEvent",
    "Namespace",
    "Run",
    "SavedView",
    "Silence",
    "Source",
    "SweepFailure",
    "Task",
    "TaskReport",
    "TaskRequest",
    "Thread",
    "ToolRejection",
    "Wake",
]
