"""Times are written in UTC with their shape, and the zone the operator chose (a cookie
set by the header's form) is on <html> for the script to show them in."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from supervisor.web.templatetags.readable import ago, utc
from supervisor.web.time_zones import COOKIE

pytestmark = pytest.mark.django_db

AT = datetime(2026, 11, 5, 22, 50, 35, 143000, tzinfo=UTC)


def test_a_time_is_written_in_utc_with_its_shape_and_utc_on_hover():
    assert str(utc(AT)) == (
        '<time datetime="2026-11-05T22:50:35.143000+00:00" title="2026-11-05 22:50:35 UTC"'
        ' data-shape="seconds">2026-11-05 22:50:35 UTC</time>'
    )
    assert ">2026-11-05 22:50 UTC</time>" in str(utc(AT, "minutes"))
    assert 'data-shape="time">22:50:35.143</time>' in str(utc(AT, "time"))
    assert 'title="2026-11-05 22:50:35 UTC" data-ago>' in str(ago(AT, AT))


def test_utc_is_the_default_and_the_header_offers_the_choice(client, viewer):
    client.force_login(viewer)
    page = client.get("/").content.decode()
    assert '<html lang="en" data-times="utc">' in page
    assert '<form method="post" action="/times/" class="zone-choice" id="zone-choice">' in page
    assert '<label for="times-zone">Times in</label>' in page
    assert '<option value="utc" selected>UTC</option>' in page
    assert '<input type="hidden" name="next" value="/">' in page


def test_the_choice_is_kept_in_a_cookie_and_leads_back(client, viewer):
    client.force_login(viewer)
    response = client.post("/times/", {"times": "local", "next": "/audit/?page=2"})
    assert response.status_code == 302 and response["Location"] == "/audit/?page=2"
    cookie = response.cookies[COOKIE]
    assert cookie.value == "local" and cookie["samesite"] == "Lax"
    assert cookie["max-age"] == 365 * 24 * 3600
    page = client.get("/audit/").content.decode()
    assert '<html lang="en" data-times="local">' in page
    assert '<option value="local" selected>My browser’s zone</option>' in page


def test_a_bad_choice_or_a_foreign_next_is_ignored(client, viewer):
    client.force_login(viewer)
    response = client.post("/times/", {"times": "mars", "next": "https://evil.example/"})
    assert response["Location"] == "/"
    assert COOKIE not in response.cookies
    client.cookies[COOKIE] = "mars"  # a cookie edited by hand reads as the default
    assert 'data-times="utc"' in client.get("/").content.decode()


def test_the_pages_write_their_times_through_the_filter():
    """No page writes a time of its own (`|date`) that the script would not convert."""
    root = Path(__file__).resolve().parents[2] / "templates"
    written = [
        f"{path.relative_to(root)}: {line.strip()[:80]}"
        for path in root.rglob("*.html")
        for line in path.read_text().splitlines()
        if "<time" in line and "|date:'c'" in line
    ]
    assert written == []
