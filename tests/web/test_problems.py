"""A task's open flags are one problem: the worst severity heads it, the rest are facets."""

from datetime import UTC, datetime, timedelta

import pytest

from supervisor.core.flags.writers import do_acknowledge_flag
from supervisor.core.models import Flag, Task
from supervisor.core.triage import silences
from supervisor.web.problems import problem_of, problems_of

NOW = datetime(2026, 11, 5, 23, 0, tzinfo=UTC)


def test_the_most_severe_kind_heads_the_problem():
    problem = problem_of([("stuck", None, None), ("stale_result", None, None)], NOW)
    assert problem.severity == "critical"
    assert [f.kind for f in problem.facets] == ["stale_result", "stuck"]
    assert problem.headline.words.title == "Stale result handed on"


def test_among_equals_the_kind_that_says_what_the_parent_holds_heads_it():
    flags = [("premature_completion", None, None), ("stale_result", None, None)]
    assert problem_of(flags, NOW).headline.kind == "stale_result"


def test_a_problem_is_taken_up_only_when_every_flag_is():
    snoozed = NOW + timedelta(hours=1)
    half = problem_of([("stuck", NOW, None), ("orphan_wake", None, None)], NOW)
    assert not half.taken_up
    assert half.headline.kind == "orphan_wake"  # what nobody has taken up comes first
    whole = problem_of([("stuck", NOW, None), ("orphan_wake", None, snoozed)], NOW)
    assert whole.taken_up
    run_out = problem_of([("stuck", None, NOW - timedelta(minutes=1))], NOW)
    assert not run_out.taken_up


def test_no_open_flag_is_no_problem():
    assert problem_of([], NOW) is None


@pytest.mark.django_db
def test_problems_of_many_tasks_cost_one_query(three_levels, django_assert_num_queries):
    pks = list(Task.objects.values_list("pk", flat=True))
    found = silences.active(NOW)  # read once a request, whatever the number of tasks
    with django_assert_num_queries(1):
        problems = problems_of(pks, NOW, found)
    (problem,) = problems.values()
    assert {f.kind for f in problem.facets} == {
        "premature_completion",
        "stale_result",
        "undelivered_result",
    }
    for flag in Flag.objects.filter(state=Flag.OPEN):
        do_acknowledge_flag(flag, NOW, by=None, actor="user:op")
    (problem,) = problems_of(pks, NOW).values()
    assert problem.taken_up


def test_what_nobody_has_taken_up_heads_the_problem_and_gives_its_severity():
    problem = problem_of([("stale_result", NOW, None), ("stuck", None, None)], NOW)
    assert problem.headline.kind == "stuck" and problem.severity == "warning"
    assert [f.kind for f in problem.others] == ["stale_result"]
