"""Channels group names, in one place."""

EVERYTHING = "live.all"  # overview and task list: every change


def task(task_pk: int) -> str:
    return f"live.task.{task_pk}"


def thread(thread_pk: int) -> str:
    return f"live.thread.{thread_pk}"


def user(user_pk: int) -> str:
    """Every socket of a user: told to re-read its session when that may have changed."""
    return f"live.user.{user_pk}"
