"""A page's query or form value that no query can carry (NUL, a lone surrogate) is a
400 naming the parameter, as the API answers the same input (supervisor/api/inputs.py):
PostgreSQL refuses NUL in a query, so the filter would otherwise be a 500. So is a path
holding one (`/tasks/%00/` reaches the short-id lookup), whichever page it would name.
The API's own operations name their fields their own way and are left to it."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse

from supervisor.core.contract.events import unstorable


class UnstorableValue(BadRequest):
    """Its words name the parameter and the problem; the 400 page shows them."""


def check_values(request: HttpRequest) -> None:
    if problem := unstorable(request.path_info):
        raise UnstorableValue(f"The address {problem}.")
    sent = [request.GET]
    if request.method == "POST":
        sent.append(request.POST)
    for values in sent:
        for name, items in values.lists():
            for text in (name, *items):
                problem = unstorable(text)
                if problem and text is name:
                    raise UnstorableValue(f"A parameter's name {problem}.")
                if problem:
                    raise UnstorableValue(f"The value of “{name}” {problem}.")


class UnstorableInputMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            check_values(request)
        return self.get_response(request)
