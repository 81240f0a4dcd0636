"""Admin pages: sources and their tokens, users and their roles, dead letters, and what
the sweeps could not do.

Every page needs a login with the core.administer permission (the admin role); anyone
else logged in gets 403. Forms post and then redirect with a message, except where a
secret is shown: a new token or generated password is rendered once in the answer to
the POST itself, never stored and never cached, so there is no page to come back to.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from supervisor.core import clock
from supervisor.core.access.roles import ROLE_WORDS, RoleError, do_create_user, do_set_role, role_of
from supervisor.core.access.sources import (
    do_add_source,
    do_bind_connector,
    do_revoke_source,
    do_rotate_token,
)
from supervisor.core.contract import connectors as registry
from supervisor.core.contract.connectors import ConnectorError, SettingsError
from supervisor.core.contract.events import storable
from supervisor.core.ingest.dead_letters import ReplayError, do_replay_dead_letter
from supervisor.core.models import DeadLetter, Namespace, Source, SweepFailure, Task, Thread
from supervisor.core.queries.pagination import CursorError, decode, encode

from .admin_forms import ConnectorForm, ReplayForm, RoleForm, SourceForm, UserForm, masked

ADMINISTER_PERMISSION = "core.administer"
DEAD_LETTER_PAGE = 50


def administer_required(view):
    """Log in first (a stranger is sent to the login page), then the admin role or 403."""

    @wraps(view)
    @login_required
    def checked(request, *args, **kwargs):
        if not request.user.has_perm(ADMINISTER_PERMISSION):
            raise PermissionDenied("this page is for admins")
        return view(request, *args, **kwargs)

    return checked


def _secret_page(request, template: str, context: dict):
    """A page that shows a secret once: not kept by the browser's cache or history."""
    response = render(request, template, context)
    add_never_cache_headers(response)
    return response


# --- sources ------------------------------------------------------------------------


def _visible_sources():
    # The internal source records deliveries made by hand; it has no usable token.
    return Source.objects.filter(internal=False).select_related("namespace")


def _connector_labels() -> dict[str, str]:
    return {name: kind.label for name, kind in registry.connectors().items()}


@administer_required
@require_safe
def admin_home(request):
    """/admin/ on its own: every admin page lives under it, so it leads to the first."""
    return redirect("web:admin-sources")


@administer_required
@require_safe
def sources(request):
    labels = _connector_labels()
    rows = list(_visible_sources().order_by("name"))
    for source in rows:
        source.connector_label = labels.get(source.connector, source.connector)
    return render(request, "web/admin/sources.html", {"nav": "sources", "sources": rows})


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def source_create(request):
    form = SourceForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        source, token = do_add_source(
            data["name"],
            data["namespace"] or None,
            ",".join(data["scopes"]),
            data["connector"],
            data["connector_settings"],
            by=request.user,
        )
        return _secret_page(
            request,
            "web/admin/token.html",
            {"nav": "sources", "source": source, "token": token, "created": True},
        )
    namespaces = Namespace.objects.order_by("name").values_list("name", flat=True)
    return render(
        request,
        "web/admin/source_form.html",
        {"nav": "sources", "form": form, "namespaces": list(namespaces)},
    )


def _source_page(request, source: Source, connector_form: ConnectorForm | None = None):
    if connector_form is None:
        connector_form = ConnectorForm(
            initial={
                "connector": source.connector,
                "connector_settings": json.dumps(masked(source.connector_settings), indent=2)
                if source.connector_settings
                else "",
            }
        )
    source.connector_label = _connector_labels().get(source.connector, source.connector)
    return render(
        request,
        "web/admin/source.html",
        {
            "nav": "sources",
            "source": source,
            "connector_form": connector_form,
            "token_expiry": _token_expiry(source),
        },
    )


TOKEN_EXPIRY_WARNING = timedelta(days=7)


def _token_expiry(source: Source) -> dict | None:
    """When the connector's credential stops working, and whether to warn: a token that
    expires stops every action for the source, with no other sign beforehand."""
    try:
        connector = registry.connector_for(source)
    except SettingsError:
        return None  # the settings form says what is wrong
    expires = connector.token_expires() if connector else None
    if expires is None:
        return None
    left = expires - clock.now()
    return {
        "at": expires,
        "expired": left <= timedelta(0),
        "soon": timedelta(0) < left <= TOKEN_EXPIRY_WARNING,
        "days": left.days,
    }


@administer_required
@require_safe
def source_detail(request, pk: int):
    return _source_page(request, get_object_or_404(_visible_sources(), pk=pk))


@administer_required
@require_POST
def source_connector(request, pk: int):
    source = get_object_or_404(_visible_sources(), pk=pk)
    form = ConnectorForm(request.POST, stored=(source.connector, source.connector_settings))
    if not form.is_valid():
        return _source_page(request, source, form)
    connector = form.cleaned_data["connector"]
    do_bind_connector(source, connector, form.cleaned_data["connector_settings"], by=request.user)
    if connector:
        messages.success(request, f"{source.name} is now acted for by the {connector} connector.")
    else:
        messages.success(request, f"{source.name} has no connector now: nothing acts for it.")
    return redirect("web:admin-source", pk=source.pk)


@administer_required
@require_POST
def source_test(request, pk: int):
    """Reach the source's orchestrator through its connector, acting on nothing, and say
    what answered (or why nothing did)."""
    source = get_object_or_404(_visible_sources(), pk=pk)
    try:
        connector = registry.connector_for(source)
        if connector is None:
            messages.error(request, f"{source.name} has no connector: there is nothing to test.")
        else:
            answer = connector.check_connection(timeout=settings.SUPERVISOR_ACTIONS["timeout"])
            messages.success(request, f"Connection test of {source.name}: {answer}")
    except (ConnectorError, SettingsError) as exc:
        messages.error(request, f"Connection test of {source.name} failed: {exc}")
    return redirect("web:admin-source", pk=source.pk)


@administer_required
@require_POST
def source_revoke(request, pk: int):
    source = get_object_or_404(_visible_sources(), pk=pk)
    if not request.POST.get("confirm"):
        messages.error(request, "Tick the box to confirm: the token stops working at once.")
    elif do_revoke_source(source, by=request.user):
        messages.success(request, f"Revoked the token of {source.name} ({source.token_prefix}…).")
    else:
        messages.error(request, f"The token of {source.name} was revoked already.")
    return redirect("web:admin-source", pk=source.pk)


@administer_required
@require_POST
def source_rotate(request, pk: int):
    source = get_object_or_404(_visible_sources(), pk=pk)
    if not request.POST.get("confirm"):
        messages.error(request, "Tick the box to confirm: the old token stops working at once.")
        return redirect("web:admin-source", pk=source.pk)
    token = do_rotate_token(source, by=request.user)
    source.refresh_from_db()
    return _secret_page(
        request,
        "web/admin/token.html",
        {"nav": "sources", "source": source, "token": token, "created": False},
    )


# --- users --------------------------------------------------------------------------


@administer_required
@require_safe
def users(request):
    User = get_user_model()
    rows = [
        {"user": user, "role": role_of(user)}
        for user in User.objects.prefetch_related("groups").order_by(User.USERNAME_FIELD)
    ]
    return render(
        request,
        "web/admin/users.html",
        {"nav": "users", "rows": rows, "roles": list(ROLE_WORDS.items())},
    )


@administer_required
@require_http_methods(["GET", "HEAD", "POST"])
def user_create(request):
    form = UserForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user, password = do_create_user(
                data["username"], data["role"], data["password"] or None, by=request.user
            )
        except RoleError as exc:  # a race with another admin creating the same name
            form.add_error("username", str(exc))
        else:
            if data["password"]:
                messages.success(request, f"Created {user.get_username()} ({data['role']}).")
                return redirect("web:admin-users")
            return _secret_page(
                request,
                "web/admin/password.html",
                {"nav": "users", "new_user": user, "role": data["role"], "password": password},
            )
    return render(request, "web/admin/user_form.html", {"nav": "users", "form": form})


@administer_required
@require_POST
def user_role(request, pk: int):
    user = get_object_or_404(get_user_model(), pk=pk)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
        return redirect("web:admin-users")
    role = form.cleaned_data["role"]
    try:
        previous = do_set_role(user, role, by=request.user)
    except RoleError as exc:
        messages.error(request, f"Could not change the role of {user.get_username()}: {exc}.")
    else:
        if previous == role:
            messages.success(request, f"{user.get_username()} has the {role} role already.")
        else:
            messages.success(request, f"{user.get_username()} is now {role}.")
    return redirect("web:admin-users")


# --- dead letters -------------------------------------------------------------------


@administer_required
@require_safe
def dead_letters(request):
    letters = DeadLetter.objects.select_related("source")
    waiting = request.GET.get("state") == "waiting"
    if waiting:
        letters = letters.filter(replayed_at__isnull=True)
    cursor = request.GET.get("cursor")
    if cursor:
        try:
            at, pk = decode(cursor, (datetime, int))
        except CursorError:
            at = pk = None
        if pk is not None:
            letters = letters.filter(Q(received_at__lt=at) | Q(received_at=at, pk__lt=pk))
    page = list(letters.order_by("-received_at", "-pk")[: DEAD_LETTER_PAGE + 1])
    next_query = None
    if len(page) > DEAD_LETTER_PAGE:
        page = page[:DEAD_LETTER_PAGE]
        next_cursor = encode(page[-1].received_at, page[-1].pk)
        next_query = ("state=waiting&" if waiting else "") + f"cursor={next_cursor}"
    return render(
        request,
        "web/admin/dead_letters.html",
        {"nav": "dead-letters", "letters": page, "waiting": waiting, "next_query": next_query},
    )


def pretty_body(body: str) -> str:
    """The body indented if it is JSON, else as it came. A lone surrogate (or NUL) in it
    stays the `\\ud800` escape it was stored as: decoded, no page could be encoded."""
    try:
        return storable(json.dumps(json.loads(body), indent=2, ensure_ascii=False))
    except (json.JSONDecodeError, TypeError):
        return body


def _dead_letter_page(request, letter: DeadLetter, form: ReplayForm | None = None):
    pretty = pretty_body(letter.body)
    return render(
        request,
        "web/admin/dead_letter.html",
        {
            "nav": "dead-letters",
            "letter": letter,
            "pretty": pretty,
            "form": form or ReplayForm(initial={"body": pretty}),
        },
    )


@administer_required
@require_safe
def dead_letter(request, pk: int):
    letter = get_object_or_404(DeadLetter.objects.select_related("source"), pk=pk)
    return _dead_letter_page(request, letter)


@administer_required
@require_POST
def dead_letter_replay(request, pk: int):
    letter = get_object_or_404(DeadLetter.objects.select_related("source"), pk=pk)
    form = ReplayForm(request.POST)
    if not form.is_valid():
        return _dead_letter_page(request, letter, form)
    try:
        result = do_replay_dead_letter(letter, form.cleaned_data["body"], by=request.user)
    except ReplayError as exc:
        # Back to the form with the admin's own text, so the next fix starts from it.
        form.add_error("body", f"Not replayed: {exc}")
        letter.refresh_from_db()
        return _dead_letter_page(request, letter, form)
    messages.success(
        request,
        f"Replayed: {result.accepted} event{'' if result.accepted == 1 else 's'} accepted, "
        f"{result.duplicates} already received.",
    )
    return redirect(reverse("web:admin-dead-letter", args=[letter.pk]))


@administer_required
@require_safe
def sweep_failures(request):
    """Subjects and steps a sweep could not do, the oldest failure first, each with a
    link to its subject where it has a page."""
    failures = list(
        SweepFailure.objects.select_related("namespace").order_by("first_failed_at", "pk")[:200]
    )
    pages = _subject_pages(failures)
    rows = [
        {"failure": f, "page": pages.get((f.subject_type, f.namespace_id, f.subject_id))}
        for f in failures
    ]
    return render(request, "web/admin/failures.html", {"nav": "failures", "rows": rows})


def _subject_pages(failures) -> dict:
    """(type, namespace, id) -> the URL of the task's or thread's page."""
    pages = {}
    for model, kind, key, view in (
        (Task, "task", "task_id", "web:task-detail"),
        (Thread, "thread", "thread_id", "web:thread"),
    ):
        wanted = Q(pk__in=[])
        for f in failures:
            if f.subject_type == kind:
                wanted |= Q(namespace_id=f.namespace_id, **{key: f.subject_id})
        rows = model.objects.filter(wanted).values_list("pk", "namespace_id", key)
        for pk, ns, subject_id in rows:
            pages[(kind, ns, subject_id)] = reverse(view, args=[pk])
    return pages
