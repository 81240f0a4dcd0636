"""The bulk preview of deliver and continue lists the exact text each task would get
(the first tasks in full, escaped; how many are not shown), and a task whose text
changed after the preview is refused rather than sent unseen."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from supervisor.core.actions.previews import continue_text, delivery_text
from supervisor.core.ingest.apply import apply_events
from supervisor.core.models import Action, Task
from supervisor.web.bulk_views import TEXT_ROWS
from tests.support.cast import OPERATOR, login_as
from tests.support.factories import at, make_tasks
from tests.support.forms import confirm_form

pytestmark = pytest.mark.django_db

BULK = reverse("web:bulk-action")
TITLE = "<i>Port</i>"
EXTRA = 3  # tasks past the ones whose text is shown


@pytest.fixture
def tasks(source):
    """TEXT_ROWS + EXTRA finished tasks whose titles hold markup, on a bound connector
    (nothing is sent in these tests: the actions only queue)."""
    source.connector = "webhook"
    source.connector_settings = {"url": "http://127.0.0.1:9/", "secret": "s" * 24}
    source.save()
    make_tasks(source, TEXT_ROWS + EXTRA, title=TITLE)
    return list(Task.objects.filter(known=True).order_by("-delegated_at", "-pk"))


def test_the_bulk_deliver_preview_shows_each_text_escaped_and_says_how_many_not(client, tasks):
    login_as(client, OPERATOR)
    html = client.get(BULK, {"kind": "deliver", "scope": "matching", "q": "Port"}).content.decode()
    last = TEXT_ROWS + EXTRA - 1  # the newest task, shown first
    text = delivery_text(tasks[0], f"thread:t{last}:1", f"result {last}")
    assert f'<pre class="sent-text">{escape(text)}</pre>' in html
    assert TITLE not in html  # escaped everywhere
    assert html.count('<pre class="sent-text">') == TEXT_ROWS
    assert f"({EXTRA} shown above without it)" in html
    assert html.count("(its text is not shown here)") == EXTRA


def test_the_bulk_continue_preview_shows_the_message(client, tasks):
    login_as(client, OPERATOR)
    html = client.get(BULK, {"kind": "continue", "task": [tasks[0].pk]}).content.decode()
    assert f'<pre class="sent-text">{escape(continue_text(tasks[0], None))}</pre>' in html


def test_a_text_changed_after_the_bulk_preview_is_refused_not_sent(client, source, tasks):
    login_as(client, OPERATOR)
    picked = {"kind": "deliver", "task": [t.pk for t in tasks[:2]]}
    form = {**confirm_form(client.get(BULK, picked).content.decode()), "reason": "r"}
    changed = tasks[0]
    n = int(changed.task_id.removeprefix("task:t"))
    apply_events(  # the child's run is reported again with another text
        source,
        [
            {
                "id": "amended",
                "type": "run.finished",
                "at": at(n * 10 + 5),
                "data": {
                    "thread": f"thread:t{n}",
                    "run": f"thread:t{n}:1",
                    "status": "completed",
                    "summary": "another text",
                },
            }
        ],
    )
    done = client.post(BULK, form, follow=True).content.decode()
    assert "Queued 1 of 2" in done and "changed since its preview" in done
    assert list(Action.objects.values_list("task_id", flat=True)) == [tasks[1].pk]
