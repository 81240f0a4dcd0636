"""The controls of a page's markup, and which of them need a label."""

from html.parser import HTMLParser


class Controls(HTMLParser):
    def __init__(self):
        super().__init__()
        self.controls, self.label_for = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "label" and attrs.get("for"):
            self.label_for.add(attrs["for"])
        if tag in ("input", "select", "textarea"):
            if tag == "input" and (attrs.get("type") or "text").lower() in UNLABELLED_TYPES:
                return
            self.controls.append(attrs)

    def unlabelled(self) -> list[dict]:
        return [
            c
            for c in self.controls
            if not (c.get("aria-label") or c.get("aria-labelledby"))
            and c.get("id") not in self.label_for
        ]


UNLABELLED_TYPES = {"hidden", "submit", "button", "reset", "image"}
