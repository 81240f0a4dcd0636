"""A delegation that never started shows on the pages as a flag on the parent
thread: the overview's flags on threads and the thread page, with its meaning and advice."""

from html import unescape

import pytest

from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Flag, Thread
from tests.support.scenarios import load_own

pytestmark = pytest.mark.django_db

LEAD = "thread:dns-lead"


@pytest.fixture
def hung(source):
    load_own(source, "delegation-never-started.json")
    return Flag.objects.get(kind="delegation_never_started", state=Flag.OPEN)


def test_the_flag_sits_on_the_parent_thread(hung):
    assert (hung.subject_type, hung.subject_id) == ("thread", LEAD)
    assert "'dns-req-1' ('Bisect the flaky retry test')" in hung.evidence["text"]


def test_the_overview_lists_it_among_the_flags_on_threads(client, viewer, hung):
    client.force_login(viewer)
    html = client.get("/").content.decode()
    flags = html[html.index('id="overview-thread-flags"') :]
    assert "Delegation never started" in flags
    assert f">thread {LEAD}</a>" in flags


def test_the_thread_page_says_what_happened_and_what_to_do(client, viewer, hung):
    client.force_login(viewer)
    pk = Thread.objects.get(thread_id=LEAD).pk
    html = unescape(client.get(f"/threads/{pk}/").content.decode())
    entry = kind_of("delegation_never_started")
    assert entry.title in html
    assert "Bisect the flaky retry test" in html
    assert entry.meaning in html and entry.advice in html
