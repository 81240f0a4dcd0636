"""Markup rules every page keeps: no inline script, no hx-on (a strict CSP must work),
a label on every control, htmx loaded from our static files with its inline styles off."""

import re
from pathlib import Path

import pytest

from supervisor.core.models import Task, Thread
from tests.support.factories import make_tasks
from tests.support.markup import Controls

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"


def template_files():
    return sorted(TEMPLATES.rglob("*.html"))


def test_there_are_templates_to_scan():
    assert len(template_files()) >= 5


@pytest.mark.parametrize("path", template_files(), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_template_has_an_inline_script_or_hx_on(path):
    text = path.read_text()
    for tag in re.findall(r"<script\b[^>]*>", text, flags=re.I):
        assert re.search(r"\bsrc=", tag), f"inline <script> in {path.name}: {tag}"
    assert not re.search(r"\bhx-on", text, flags=re.I), f"hx-on in {path.name}"
    assert not re.search(r"\bdata-hx-on", text, flags=re.I)
    assert not re.search(r"\son[a-z]+\s*=", text, flags=re.I), f"on* handler in {path.name}"
    assert not re.search(r"\sstyle\s*=", text, flags=re.I), f"inline style in {path.name}"


@pytest.fixture
def urls(source, three_levels, silent_source):
    make_tasks(source, 3)
    return [
        "/",
        "/tasks/",
        f"/tasks/{Task.objects.get(task_id='task:release-plan').pk}/",
        f"/threads/{Thread.objects.get(thread_id='thread:lead-release').pk}/",
    ]


@pytest.mark.django_db
def test_every_control_on_every_page_has_a_label(client, acting, urls):
    client.force_login(acting)
    seen = 0
    for url in urls:
        parser = Controls()
        parser.feed(client.get(url).content.decode())
        seen += len(parser.controls)
        assert parser.unlabelled() == [], url
    assert seen > 10


@pytest.mark.django_db
def test_the_login_page_controls_are_labelled(client):
    parser = Controls()
    parser.feed(client.get("/login/").content.decode())
    assert parser.controls and parser.unlabelled() == []


@pytest.mark.django_db
def test_pages_load_htmx_ws_and_live_js_from_static_in_order(client, viewer, urls):
    client.force_login(viewer)
    html = client.get("/").content.decode()
    scripts = re.findall(r'<script src="([^"]+)" defer></script>', html)
    assert scripts == [
        "/static/vendor/htmx/htmx.min.js",
        "/static/vendor/htmx-ext-ws/ws.js",
        "/static/js/live.js",
        "/static/js/live_frames.js",
        "/static/js/focus.js",
    ]
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles":false}'>""" in html
    assert re.search(r"""<body hx-headers='\{"X-CSRFToken": "[^"]+"\}'>""", html)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("which", "view"), [("overview", "overview"), ("list", "list"), ("task", "task")]
)
def test_live_pages_connect_the_socket_with_the_newest_change(client, viewer, urls, which, view):
    from supervisor.core.models import Change

    client.force_login(viewer)
    url = {"overview": urls[0], "list": urls[1], "task": urls[2]}[which]
    html = client.get(url).content.decode()
    newest = Change.objects.order_by("-id").values_list("id", flat=True).first()
    assert newest
    live = re.search(r'<div id="live" hx-ext="ws, live-frames" ws-connect="([^"]+)"[^>]*>', html)
    assert live and f'data-last-change="{newest}"' in live.group(0)
    assert live.group(1).startswith(f"/ws/live/?view={view}")
    if view == "task":
        assert live.group(1).endswith(f"&amp;id={url.split('/')[2]}")
    assert re.search(r'<span id="open-flag-count" data-count="\d+" hidden>', html)


@pytest.mark.django_db
def test_the_thread_page_connects_with_its_thread_id(client, viewer, urls):
    client.force_login(viewer)
    pk = urls[3].split("/")[2]
    html = client.get(urls[3]).content.decode()
    assert f'ws-connect="/ws/live/?view=thread&amp;id={pk}"' in html
