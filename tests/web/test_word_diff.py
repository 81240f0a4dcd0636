"""The word diff between what the parent was given and the latest result."""

from supervisor.web.word_diff import DELETE, EQUAL, INSERT, Segment, same_words, word_diff


def test_equal_texts_are_one_equal_segment():
    assert word_diff("all green", "all  green\n") == [Segment(EQUAL, "all green")]


def test_a_replaced_word_is_a_deletion_then_an_insertion():
    assert word_diff("Suite still running", "Suite passed") == [
        Segment(EQUAL, "Suite"),
        Segment(DELETE, "still running"),
        Segment(INSERT, "passed"),
    ]


def test_added_words_at_the_end_are_an_insertion():
    assert word_diff("Plan drafted.", "Plan drafted. Ship 4.3 on Monday.") == [
        Segment(EQUAL, "Plan drafted."),
        Segment(INSERT, "Ship 4.3 on Monday."),
    ]


def test_nothing_given_is_all_inserted():
    assert word_diff(None, "the result") == [Segment(INSERT, "the result")]
    assert word_diff("the result", "") == [Segment(DELETE, "the result")]


def test_white_space_does_not_count_as_a_difference():
    assert same_words(" a  b\n", "a b")
    assert not same_words("a b", "a c")


def test_the_task_page_shows_the_diff_with_words_for_screen_readers(client, viewer, three_levels):
    from supervisor.core.models import Task

    client.force_login(viewer)
    task = Task.objects.get(task_id="task:release-plan")
    html = client.get(f"/tasks/{task.pk}/").content.decode()
    assert "What changed" in html
    assert '<del><span class="visually-hidden">[removed: </span>' in html
    assert '<ins><span class="visually-hidden">[added: </span>' in html


def test_a_lone_equal_word_between_changes_is_folded_into_them():
    assert word_diff("waits on it.", "ship on Tuesday.") == [
        Segment(DELETE, "waits on it."),
        Segment(INSERT, "ship on Tuesday."),
    ]
