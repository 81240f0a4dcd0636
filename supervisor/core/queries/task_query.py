"""The task list's query, shared by the API and the pages: known tasks filtered by
flag kind and state, status, text and namespace; PAGE_SIZE tasks a page."""

from django.db.models import Exists, OuterRef, Q

from supervisor.core.models import Flag, Task

PAGE_SIZE = 50


def task_queryset(*, flag=None, state=None, status=None, q=None, namespace=None):
    tasks = Task.objects.filter(known=True).select_related(
        "namespace", "parent_thread", "child_thread", "assignee"
    )
    if namespace:
        tasks = tasks.filter(namespace__name=namespace)
    if status:
        tasks = tasks.filter(status=status)
    if q:
        tasks = tasks.filter(Q(title__icontains=q) | Q(task_id__icontains=q))
    if flag or state:
        flags = Flag.objects.filter(task=OuterRef("pk"))
        if flag:
            flags = flags.filter(kind=flag)
        if state:
            flags = flags.filter(state=state)
        tasks = tasks.filter(Exists(flags))
    return tasks
