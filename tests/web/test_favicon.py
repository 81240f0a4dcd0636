"""The tab's icon carries the count of open flags nobody has taken up."""

import pytest

from supervisor.web.favicon import count_from, icon_svg

pytestmark = pytest.mark.django_db


def test_the_icon_draws_the_count_it_is_asked_for(client):
    response = client.get("/favicon.svg?n=7")
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert ">7</text>" in response.content.decode()
    assert "<text" not in client.get("/favicon.svg").content.decode()


def test_a_large_or_odd_count_draws_a_bounded_badge():
    assert ">99+</text>" in icon_svg(1500)
    assert count_from("-3") == count_from("１２") == count_from("9" * 40) == count_from("x") == 0


def test_pages_link_the_icon_with_their_count(client, user, three_levels):
    client.force_login(user)
    html = client.get("/").content.decode()
    assert 'id="favicon" type="image/svg+xml" href="/favicon.svg?n=3"' in html


def test_browsers_asking_for_favicon_ico_are_sent_to_the_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/favicon.svg"


def test_the_icon_drops_its_all_good_check_under_a_count():
    """A check mark said "all good" under a red count of problems."""
    check = 'd="M9 17l5 5 9-11"'
    assert check in icon_svg(0)
    assert check not in icon_svg(3) and check not in icon_svg(1500)
