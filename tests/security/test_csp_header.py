"""Every page's Content-Security-Policy forbids `<base>` (`base-uri 'none'`): an
injected base element could send every relative link, form and script elsewhere. No
template of ours uses one, which the policy would otherwise break."""

from pathlib import Path

import pytest

from tests.support.cast import ADMIN, login_as

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["/login/", "/", "/tasks/", "/admin/sources/", "/api/v1/docs", "/no-such-page/"]


def directives(policy: str) -> dict[str, list[str]]:
    parts = (d.split() for d in policy.split(";") if d.strip())
    return {name: values for name, *values in parts}


@pytest.mark.parametrize("path", PAGES)
def test_every_page_forbids_a_base_element(client, path):
    login_as(client, ADMIN)
    response = client.get(path)
    assert response.status_code in (200, 404), path
    policy = directives(response["Content-Security-Policy"])
    assert policy["base-uri"] == ["'none'"]
    assert policy["default-src"] == ["'self'"]  # the rest of the policy still there


def test_no_template_uses_a_base_element():
    templates = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("supervisor/**/templates/**/*.html")]
    assert templates
    assert not [t for t in templates if "<base" in t.read_text().lower()]
