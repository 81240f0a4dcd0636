"""Silences by matcher: which open flags they hold, that every count reads them, and that
creating, editing and ending one is checked, idempotent and audited."""

from datetime import UTC, datetime, timedelta

import pytest

from supervisor.core.access.sources import do_create_source
from supervisor.core.facts.snapshot import Finding
from supervisor.core.flags.writers import do_open_flag
from supervisor.core.models import Change, Flag, Silence, Task
from supervisor.core.triage import silences
from supervisor.core.triage.silences import (
    SilenceError,
    do_create_silence,
    do_edit_silence,
    do_end_silence,
)
from tests.support.factories import make_tasks

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 6, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=4)


def open_flag(source, subject: str, kind: str = "stuck", subject_type: str = "task") -> Flag:
    flag = do_open_flag(source.namespace_id, Finding(kind, subject_type, subject), NOW)
    assert flag is not None
    return flag


@pytest.fixture
def flags(source):
    """Three tasks ("Task 0..2"), each with a stuck flag; task 1 also a stale result;
    task 0 is delegated to staging, task 1 runs in prod, task 2 has no environment; and
    a thread flag."""
    make_tasks(source, 3)
    Task.objects.filter(task_id="task:t0").update(target_env="staging", env="prod")
    Task.objects.filter(task_id="task:t1").update(env="prod")
    return {
        "stuck0": open_flag(source, "task:t0"),
        "stuck1": open_flag(source, "task:t1"),
        "stale1": open_flag(source, "task:t1", "stale_result"),
        "stuck2": open_flag(source, "task:t2"),
        "thread": open_flag(source, "thread:lead", "delegation_rejected", "thread"),
    }


def silence(**matchers) -> Silence:
    return do_create_silence(
        **matchers, reason="deploy in progress", ends_at=LATER, now=NOW, actor="user:op"
    )


def held(flags) -> set[str]:
    """The names of `flags` some active silence holds, through the quiet Q."""
    quiet = set(Flag.objects.filter(silences.quiet(NOW)).values_list("pk", flat=True))
    return {name for name, flag in flags.items() if flag.pk in quiet}


def needing(flags) -> set[str]:
    pks = set(Flag.objects.filter(silences.needing_action(NOW)).values_list("pk", flat=True))
    return {name for name, flag in flags.items() if flag.pk in pks}


def test_without_a_silence_every_open_flag_needs_action(flags):
    assert needing(flags) == set(flags) and held(flags) == set()


def test_a_kind_matcher_holds_the_flags_of_that_kind_on_any_subject(flags):
    silence(kinds=["stuck"])
    assert held(flags) == {"stuck0", "stuck1", "stuck2"}
    assert needing(flags) == {"stale1", "thread"}
    silence(kinds=["delegation_rejected"])
    assert "thread" in held(flags)


def test_title_words_must_all_appear_in_any_case(flags):
    silence(title_words=["TASK", "1"])
    assert held(flags) == {"stuck1", "stale1"}


def test_a_word_missing_from_the_title_matches_nothing(flags):
    silence(title_words=["task", "nowhere"])
    assert held(flags) == set()


def test_the_environment_is_the_target_one_else_the_tasks_own_else_default(flags):
    silence(environments=["prod"])
    assert held(flags) == {"stuck1", "stale1"}  # task 0 is delegated to staging
    silence(environments=["default"])
    assert held(flags) == {"stuck1", "stale1", "stuck2"}  # no thread: no environment


def test_a_source_matches_the_flags_of_its_namespace(flags, source):
    do_create_source("elsewhere")
    silence(sources=["elsewhere"])
    assert held(flags) == set()
    silence(sources=[source.name])
    assert held(flags) == set(flags)


def test_every_matcher_of_a_silence_must_match(flags):
    silence(kinds=["stuck"], environments=["prod"])
    assert held(flags) == {"stuck1"}


def test_an_ended_or_expired_silence_holds_nothing(flags):
    ended = silence(kinds=["stuck"])
    do_end_silence(ended, NOW + timedelta(minutes=5), actor="user:op")
    after = NOW + timedelta(minutes=6)
    assert not Flag.objects.filter(silences.quiet(after)).exists()
    silence(kinds=["stale_result"])
    assert Flag.objects.filter(silences.quiet(LATER - timedelta(seconds=1))).count() == 1
    assert not Flag.objects.filter(silences.quiet(LATER)).exists()  # it expired


def test_a_silenced_flag_stays_open(flags):
    silence(kinds=["stuck"])
    assert Flag.objects.filter(state=Flag.OPEN).count() == len(flags)


@pytest.mark.parametrize(
    "matchers",
    [
        {"kinds": ["stuck"], "title_words": ["task", "1"]},
        {"environments": ["default"]},
        {"environments": ["staging", "prod"], "kinds": ["stuck"]},
        {"title_words": ["task"]},
        {"sources": ["orchestrator"], "kinds": ["delegation_rejected"]},
    ],
)
def test_quiet_and_needing_action_split_the_open_flags(flags, matchers):
    # Negated matchers on the task's columns must keep flags without a task (NULLs).
    silence(**matchers)
    open_pks = set(Flag.objects.filter(state=Flag.OPEN).values_list("pk", flat=True))
    quiet = set(Flag.objects.filter(silences.quiet(NOW)).values_list("pk", flat=True))
    need = set(Flag.objects.filter(silences.needing_action(NOW)).values_list("pk", flat=True))
    assert quiet | need == open_pks and not quiet & need


def test_matching_names_the_longest_lasting_silence_in_one_query(flags, django_assert_num_queries):
    short = silence(kinds=["stuck", "delegation_rejected"])
    longer = do_create_silence(
        title_words=["task"], reason="noisy", ends_at=LATER + timedelta(hours=1), now=NOW
    )
    found = silences.active(NOW)
    with django_assert_num_queries(1):
        by_flag = silences.matching([f.pk for f in flags.values()], found)
    assert by_flag[flags["stuck0"].pk] == longer  # both match: the one lasting longer
    assert flags["thread"].pk in by_flag and by_flag[flags["thread"].pk] == short
    assert silences.matching([], found) == {}


def test_the_active_silences_are_read_in_one_query_without_sources(
    flags, django_assert_num_queries
):
    for kind in ("stuck", "stale_result"):
        silence(kinds=[kind])
    with django_assert_num_queries(1):
        found = silences.active(NOW)
    assert len(found.silences) == 2


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({}, None, "Matchers: set at least one"),
        ({"kinds": ["nope"]}, "kinds", "no flag kind is named nope"),
        ({"sources": ["ghost"]}, "sources", "no source is named ghost"),
        ({"kinds": ["stuck"], "reason": "  "}, "reason", "Reason: say why"),
        ({"kinds": ["stuck"], "ends_at": NOW}, "until", "must be in the future"),
        ({"kinds": ["stuck"], "ends_at": NOW + timedelta(days=31)}, "until", "at most 30 days"),
    ],
)
def test_a_bad_silence_is_refused_naming_its_field(db, fields, field, words):
    arguments = {"reason": "why", "ends_at": LATER, "now": NOW} | fields
    with pytest.raises(SilenceError) as refused:
        do_create_silence(**arguments)
    assert refused.value.field == field and words in str(refused.value)
    assert not Silence.objects.exists()


def test_creating_editing_and_ending_are_audited_once_each(flags):
    made = silence(kinds=["stuck"])
    same = {"kinds": ["stuck"], "reason": "deploy in progress", "ends_at": LATER, "now": NOW}
    do_edit_silence(made, **same, actor="user:op")  # nothing changed: no row
    do_edit_silence(made, **same | {"title_words": ["task"]}, actor="user:op")
    do_end_silence(made, NOW + timedelta(minutes=1), actor="user:op")
    do_end_silence(made, NOW + timedelta(minutes=2), actor="user:op")  # ended: nothing
    rows = list(Change.objects.filter(subject_type="silence").order_by("pk"))
    assert [r.kind for r in rows] == ["silence.created", "silence.edited", "silence.ended"]
    assert {r.payload["actor"] for r in rows} == {"user:op"}
    assert rows[1].payload["changed"] == ["title_words"]
    assert rows[0].payload["matchers"] == "kind stuck"
    made.refresh_from_db()
    assert made.ended_at == NOW + timedelta(minutes=1) == made.ends_at


def test_an_ended_silence_cannot_be_edited(flags):
    made = silence(kinds=["stuck"])
    do_end_silence(made, NOW, actor="user:op")
    with pytest.raises(SilenceError, match="has ended"):
        do_edit_silence(made, kinds=["stuck"], reason="again", ends_at=LATER, now=NOW)
