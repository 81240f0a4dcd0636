"""Saved views: named task-list filters, private or shared, checked as the list checks
its filters; only the owner renames or deletes one; viewers may save their own."""

import pytest

from supervisor.core import clock
from supervisor.core.models import SavedView
from supervisor.core.queries.saved_views import SavedViewError, do_save_view
from tests.support.cast import OPERATOR, VIEWER, login_as, make_user

pytestmark = pytest.mark.django_db


def save(client, name, query, shared=False):
    data = {"name": name, "query": query} | ({"shared": "on"} if shared else {})
    return client.post("/views/", data, follow=True)


def test_saving_a_view_keeps_the_lists_filters_and_opens_them(client, three_levels):
    me = login_as(client, OPERATOR)
    response = save(client, "my failures", "status=failed&q=&cursor=abc")
    body = response.content.decode()
    assert "Saved the view “my failures”, seen by you alone." in body
    view = SavedView.objects.get()
    assert (view.owner, view.query, view.shared) == (me, "status=failed", False)
    # The answer is the list with those filters, and the view is listed as a link to them.
    assert response.redirect_chain[-1][0] == "/tasks/?status=failed"
    assert '<a href="/tasks/?status=failed">my failures</a>' in body


def test_saving_the_same_view_twice_writes_once(client, three_levels):
    login_as(client, OPERATOR)
    save(client, "criticals", "flag=stuck")
    save(client, "criticals", "flag=stuck")
    assert SavedView.objects.count() == 1
    body = save(client, "criticals", "status=failed").content.decode()
    assert "Could not save the view: you have a view named “criticals” already" in body
    assert SavedView.objects.get().query == "flag=stuck&state=open"


@pytest.mark.parametrize(
    "query, words",
    [
        ("status=exploded", "“exploded” is no status"),
        ("flag=14", "“14” is no flag kind"),
        ("assigned=ghost", "no user is named “ghost”"),
        ("colour=red", "“colour” is no filter of the task list"),
        ("namespace=elsewhere", "no namespace is named “elsewhere”"),
    ],
)
def test_a_bad_filter_is_refused_in_the_lists_words(client, three_levels, query, words):
    login_as(client, OPERATOR)
    body = save(client, "bad", query).content.decode()
    assert "Could not save the view:" in body and words in body
    assert not SavedView.objects.exists()


def test_a_view_needs_a_name(client, three_levels):
    login_as(client, OPERATOR)
    body = save(client, "   ", "status=failed").content.decode()
    assert "Could not save the view: a saved view needs a name." in body
    assert not SavedView.objects.exists()


def test_shared_views_are_seen_by_everyone_private_ones_by_their_owner(client, three_levels):
    owner = make_user("ann", OPERATOR)
    now = clock.now()
    do_save_view(owner, "team criticals", "flag=stuck&state=open", True, now)
    do_save_view(owner, "ann's own", "status=failed", False, now)
    login_as(client, VIEWER)
    body = client.get("/tasks/").content.decode()
    assert "team criticals" in body and "shared by ann" in body
    assert "ann&#x27;s own" not in body and "ann's own" not in body
    assert "team criticals" in client.get("/").content.decode()  # the overview lists it


def test_viewers_may_save_private_views(client, three_levels):
    viewer = login_as(client, VIEWER)
    save(client, "mine", "status=running")
    assert SavedView.objects.get().owner == viewer


def test_strangers_may_not_save(client):
    response = client.post("/views/", {"name": "x", "query": ""})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not SavedView.objects.exists()


def test_the_owner_renames_shares_and_deletes_their_view(client, three_levels):
    me = login_as(client, OPERATOR)
    view = do_save_view(me, "old", "status=failed", False, clock.now())
    data = {"action": "edit", "name": "failures", "shared": "on"}
    body = client.post(f"/views/{view.pk}/", data, follow=True).content.decode()
    assert "Saved the view “failures”." in body
    view.refresh_from_db()
    assert (view.name, view.shared) == ("failures", True)
    body = client.post(f"/views/{view.pk}/", {"action": "delete"}, follow=True).content.decode()
    assert "Deleted the view “failures”." in body
    assert not SavedView.objects.exists()
    # A resend of the delete finds nothing left and says so.
    body = client.post(f"/views/{view.pk}/", {"action": "delete"}, follow=True).content.decode()
    assert "That view is deleted already." in body


def test_a_rename_to_a_name_in_use_is_refused(client, three_levels):
    me = login_as(client, OPERATOR)
    do_save_view(me, "a", "status=failed", False, clock.now())
    b = do_save_view(me, "b", "status=running", False, clock.now())
    body = client.post(f"/views/{b.pk}/", {"action": "edit", "name": "a"}, follow=True)
    assert "you have a view named “a” already" in body.content.decode()
    b.refresh_from_db()
    assert b.name == "b"


def test_two_owners_may_use_one_name(three_levels):
    now = clock.now()
    do_save_view(make_user("ann", OPERATOR), "mine", "status=failed", False, now)
    do_save_view(make_user("bob", OPERATOR), "mine", "status=failed", False, now)
    assert SavedView.objects.count() == 2


def test_others_cannot_change_a_view(client, three_levels):
    owner = make_user("ann", OPERATOR)
    shared = do_save_view(owner, "shared", "status=failed", True, clock.now())
    private = do_save_view(owner, "private", "status=failed", False, clock.now())
    login_as(client, OPERATOR)
    response = client.post(f"/views/{shared.pk}/", {"action": "delete"})
    assert response.status_code == 403
    response = client.post(f"/views/{private.pk}/", {"action": "edit", "name": "mine"})
    assert response.status_code == 404
    assert SavedView.objects.count() == 2
    with pytest.raises(SavedViewError):
        from supervisor.core.queries.saved_views import do_delete_view

        do_delete_view(shared, make_user("bob", OPERATOR))


def test_only_the_owner_is_offered_rename_and_delete(client, three_levels):
    owner = make_user("ann", OPERATOR)
    shared = do_save_view(owner, "shared", "status=failed", True, clock.now())
    login_as(client, OPERATOR)
    assert f"/views/{shared.pk}/" not in client.get("/tasks/").content.decode()
    client.force_login(owner)
    assert f"/views/{shared.pk}/" in client.get("/tasks/").content.decode()


def test_a_mine_filter_in_a_shared_view_means_each_viewer(client, three_levels):
    """ "assigned to me" is kept as words: each user who opens the view sees their own."""
    login_as(client, OPERATOR)
    save(client, "my tasks", "assigned=me", shared=True)
    assert SavedView.objects.get().query == "assigned=me"


def test_the_save_form_carries_the_filters_shown(client, three_levels):
    login_as(client, VIEWER)
    body = client.get("/tasks/?status=failed&cursor=zz").content.decode()
    assert '<input type="hidden" form="save-view" name="query" value="status=failed">' in body
    partial = client.get("/tasks/?status=running", headers={"HX-Request": "true"})
    assert 'form="save-view" name="query" value="status=running"' in partial.content.decode()


def test_a_shared_mine_view_shows_each_user_their_own_tasks(client, three_levels):
    from supervisor.core.models import Task
    from supervisor.core.triage.assignment import do_assign_task

    ann, bob = make_user("ann", OPERATOR), make_user("bob", OPERATOR)
    first, second = Task.objects.filter(known=True).order_by("pk")[:2]
    do_assign_task(first, ann, clock.now())
    do_assign_task(second, bob, clock.now())
    view = do_save_view(ann, "mine", "assigned=me", True, clock.now())
    for user, task in ((ann, first), (bob, second)):
        client.force_login(user)
        rows = client.get(f"/tasks/?{view.query}").context["rows"]
        assert [row["task"].pk for row in rows] == [task.pk]
