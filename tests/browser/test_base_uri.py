"""`base-uri 'none'` holds in a real browser: a `<base>` put into a page (as injected
markup would) is refused, so relative links, forms and scripts stay on the site."""

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

INJECT_BASE = """() => {
  const base = document.createElement("base");
  base.href = "http://evil.example/";
  document.head.prepend(base);
  return [document.baseURI, document.querySelector("form").action];
}"""


def test_an_injected_base_element_is_refused(new_page, live_app):
    page = new_page("light")
    page.goto("/login/")
    base_uri, form_action = page.evaluate(INJECT_BASE)
    assert base_uri == f"{live_app.url}/login/"
    assert form_action.startswith(f"{live_app.url}/")
    page.wait_for_timeout(300)  # violations are reported as events, after the fact
    reported = page.evaluate("() => window.__cspViolations")
    assert [v for v in reported if v.startswith("base-uri")], reported
