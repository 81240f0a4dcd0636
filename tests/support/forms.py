"""The confirm form of a preview page, as a browser would post it: its hidden inputs."""

from html.parser import HTMLParser


class _ConfirmForm(HTMLParser):
    def __init__(self):
        super().__init__()
        self.fields: dict[str, list[str]] = {}
        self._inside = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and "confirm" in (attrs.get("class") or "").split():
            self._inside = True
        elif tag == "input" and self._inside and attrs.get("type") == "hidden":
            self.fields.setdefault(attrs["name"], []).append(attrs.get("value") or "")

    def handle_endtag(self, tag):
        if tag == "form":
            self._inside = False


def confirm_form(html: str) -> dict:
    """The hidden fields of the page's confirm form (a list where a name repeats),
    without the CSRF token (the test client does not check it)."""
    parser = _ConfirmForm()
    parser.feed(html)
    fields = {k: v[0] if len(v) == 1 else v for k, v in parser.fields.items()}
    fields.pop("csrfmiddlewaretoken", None)
    assert fields, "the page has no confirm form"
    return fields
