"""A task's latest result amended after its preview was shown: what the confirm must refuse."""

from supervisor.core.ingest.apply import apply_events

AMENDED = "All checks green after a re-run of the flaky suite. PR #812 is NOT ready: CI is red."


def amend_latest_result(source) -> None:
    """The child's last run is reported again, later, with another text (an orchestrator
    that rewrites a turn's final message does this)."""
    apply_events(
        source,
        [
            {
                "id": "amended-run-4",
                "type": "run.finished",
                "at": "2026-11-05T23:05:00Z",
                "data": {
                    "thread": "thread:delegated-task:retry-port",
                    "run": LAST_RUN,
                    "status": "completed",
                    "summary": AMENDED,
                },
            }
        ],
    )


LAST_RUN = "thread:delegated-task:retry-port:run:4"
