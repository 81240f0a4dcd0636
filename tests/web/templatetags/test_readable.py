"""Ages, short ids and flag kinds in words; the exact values stay on hover."""

from datetime import UTC, datetime, timedelta

from django.template import engines

from supervisor.web.templatetags.readable import age_words, ago, short_id, short_label

NOW = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def test_ages_are_told_in_the_fewest_words_that_tell_them_apart():
    assert age_words(4) == "4 s"
    assert age_words(125) == "2 min"
    assert age_words(3600 * 3 + 60 * 5) == "3 h 5 min"
    assert age_words(3600 * 12 + 60 * 5) == "12 h"
    assert age_words(86400 * 2) == "2 days"


def test_an_age_carries_its_utc_time_on_hover():
    html = ago(NOW - timedelta(minutes=5), NOW)
    assert ">5 min ago</time>" in html
    assert 'title="2026-12-03 07:55:00 UTC"' in html and "data-ago" in html
    assert ">in 2 h</time>" in ago(NOW + timedelta(hours=2), NOW)
    assert "never" in ago(None)


def test_an_id_is_shown_by_its_last_part_with_the_whole_on_hover_and_a_copy_button():
    full = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
    assert short_label(full) == "retry-port"
    assert short_label("thread:parent-release") == "parent-release"
    assert short_label("plain") == "plain"
    html = short_id(full)
    assert f'title="{full}"' in html and ">retry-port</code>" in html
    assert f'data-copy="{full}"' in html and "Copy</button>" in html


def test_an_id_is_escaped():
    html = short_id('task:<script>"x"')
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_flag_kinds_read_as_words_with_the_code_on_hover():
    template = engines["django"].from_string("{% load readable %}{{ kind|kind_chip }}")
    html = template.render({"kind": "stale_result"})
    chip = '<span class="flag" title="flag kind: stale_result">Stale result handed on</span>'
    assert html == chip


def test_a_whole_id_is_shown_decoded_with_the_orchestrators_form_on_hover_and_copied():
    """The task page showed `command%3Amcp%3A5b1c…`, percent-encoded as T3 writes it."""
    from supervisor.web.templatetags.readable import whole_id

    full = "node:delegated-task:command%3Amcp%3A5b1c%3Adelegate-task%3Aretry-port"
    html = whole_id(full)
    assert ">node:delegated-task:command:mcp:5b1c:delegate-task:retry-port</code>" in html
    assert f'title="as the orchestrator writes it: {full}"' in html
    assert f'data-copy="{full}"' in html
    assert whole_id("thread:plain") == '<code class="id">thread:plain</code>'
    assert "&lt;b&gt;" in whole_id("task:%3Cb%3E")
