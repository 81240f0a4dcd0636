"""The silences page: every silence (active first, then those that ended), and for
operators the forms to create one, edit an active one and end it early. Viewers see
the list and each silence, and nothing to act with. Forms post and redirect with a
message; a form with errors comes back with each error beside its field."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from supervisor.core import clock
from supervisor.core.access.roles import actor_name
from supervisor.core.flags.kinds import kind_of
from supervisor.core.flags.writers import FlagActionError
from supervisor.core.models import Silence
from supervisor.core.triage import silences
from supervisor.core.triage.silences import (
    MATCHERS,
    SilenceError,
    do_create_silence,
    do_edit_silence,
    do_end_silence,
)

from .alert_forms import ListField
from .pages.task_list import FLAG_KINDS
from .snooze_times import SNOOZE_CHOICES, UNTIL, quiet_until_from_form
from .views import can_act

LIST_LIMIT = 200  # the newest ended silences listed; active ones are all listed


class WordsField(forms.CharField):
    """Words separated by spaces, each of which must appear (in any case)."""

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return " ".join(value)
        return value

    def to_python(self, value) -> list[str]:
        return list(dict.fromkeys((super().to_python(value) or "").split()))


class SilenceForm(forms.Form):
    kinds = forms.MultipleChoiceField(
        choices=[(kind, kind_of(kind).title) for kind in FLAG_KINDS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Flag kinds",
        help_text="None ticked: any kind.",
        error_messages={"invalid_choice": "Flag kinds: %(value)s is no flag kind."},
    )
    sources = ListField(
        required=False, label="Sources", help_text="Source names, comma-separated; empty: any."
    )
    environments = ListField(
        required=False,
        label="Environments",
        help_text="Comma-separated; a task's target environment, else its own; empty: any.",
    )
    title_words = WordsField(
        required=False,
        label="Title words",
        help_text="Separated by spaces; each must appear in the task's title (any case).",
    )
    reason = forms.CharField(
        label="Reason",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why, for the others.",
        error_messages={"required": "Reason: say why these flags are silenced."},
    )
    for_ = forms.ChoiceField(
        choices=[(key, label) for key, label, _ in SNOOZE_CHOICES]
        + [(UNTIL, "until the time below")],
        label="Silence for",
        initial="4h",
        error_messages={"invalid_choice": "Silence for: choose a length, or until a time."},
    )
    until = forms.CharField(
        required=False,
        label="Until (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="YYYY-MM-DD HH:MM in UTC; at most 30 days ahead.",
    )

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        # "for" is a Python keyword: the field is for_, its name on the form "for".
        self.fields["for"] = self.fields.pop("for_")
        order = ["kinds", "sources", "environments", "title_words", "reason", "for", "until"]
        self.order_fields(order)

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Reason: say why these flags are silenced.")
        return reason

    def clean(self):
        cleaned = super().clean()
        if "for" in cleaned:
            try:
                cleaned["ends_at"] = quiet_until_from_form(
                    cleaned["for"],
                    cleaned.get("until"),
                    clock.now(),
                    what="silence",
                    instead="resolve the flags instead",
                )
            except FlagActionError as exc:
                if cleaned["for"] == UNTIL:
                    self.add_error("until", f"Until: {exc}.")
                else:
                    self.add_error("for", f"Silence for: {exc}.")
        return cleaned

    def matchers(self) -> dict:
        return {k: self.cleaned_data[k] for k in MATCHERS}


def _require_act(request) -> None:
    if not can_act(request.user):
        raise PermissionDenied("your account may look but not act")


def _actor(request) -> str:
    return actor_name(request.user)


@login_required
@require_safe
def silence_list(request):
    now = clock.now()
    rows = Silence.objects.select_related("created_by", "ended_by")
    active = list(rows.filter(ends_at__gt=now).order_by("ends_at", "pk"))
    counts = silences.held_counts(silences.active(now))
    for silence in active:
        silence.holds = counts.get(silence.pk, 0)
    ended = list(rows.filter(ends_at__lte=now).order_by("-ends_at", "-pk")[:LIST_LIMIT])
    return render(
        request,
        "web/silences.html",
        {
            "nav": "silences",
            "active": active,
            "ended": ended,
            "now": now,
            "can_act": can_act(request.user),
            "form": SilenceForm() if can_act(request.user) else None,
        },
    )


def _apply(form: SilenceForm, error: SilenceError) -> None:
    form.add_error(error.field if error.field in form.fields else None, str(error))


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def silence_create(request):
    _require_act(request)
    form = SilenceForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            silence = do_create_silence(
                **form.matchers(),
                reason=form.cleaned_data["reason"],
                ends_at=form.cleaned_data["ends_at"],
                now=clock.now(),
                by=request.user,
                actor=_actor(request),
            )
        except SilenceError as exc:
            _apply(form, exc)
        else:
            messages.success(
                request,
                f"Created {silence}: the flags it matches are quiet until "
                f"{silence.ends_at:%Y-%m-%d %H:%M} UTC.",
            )
            return redirect("web:silences")
    status = 400 if request.method == "POST" else 200
    return render(
        request, "web/silence_form.html", {"nav": "silences", "form": form}, status=status
    )


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def silence_detail(request, pk: int):
    """A silence; for operators, while it is active, the form to edit it."""
    silence = get_object_or_404(Silence.objects.select_related("created_by", "ended_by"), pk=pk)
    now = clock.now()
    editable = can_act(request.user) and silence.ends_at > now
    if request.method == "POST":
        _require_act(request)
        form = SilenceForm(request.POST)
        if form.is_valid():
            ends_at = form.cleaned_data["ends_at"]
            if ends_at == silence.ends_at.replace(second=0, microsecond=0):
                ends_at = silence.ends_at  # the form shows minutes: the same end, kept
            try:
                do_edit_silence(
                    silence,
                    **form.matchers(),
                    reason=form.cleaned_data["reason"],
                    ends_at=ends_at,
                    now=now,
                    actor=_actor(request),
                )
            except SilenceError as exc:
                _apply(form, exc)
            else:
                messages.success(request, f"Saved {silence}.")
                return redirect("web:silences")
        status = 400
    else:
        initial = {
            "kinds": silence.kinds,
            "sources": silence.sources,
            "environments": silence.environments,
            "title_words": silence.title_words,
            "reason": silence.reason,
            "for": UNTIL,
            "until": f"{silence.ends_at:%Y-%m-%dT%H:%M}",
        }
        form = SilenceForm(initial=initial) if editable else None
        status = 200
    context = {"nav": "silences", "silence": silence, "form": form, "now": now}
    return render(request, "web/silence_form.html", context, status=status)


@login_required
@require_POST
def silence_end(request, pk: int):
    _require_act(request)
    silence = get_object_or_404(Silence, pk=pk)
    was_active = silence.ends_at > clock.now()
    do_end_silence(silence, clock.now(), by=request.user, actor=_actor(request))
    if was_active:
        messages.success(request, f"Ended {silence}: its flags need action again.")
    else:
        messages.info(request, f"{str(silence).capitalize()} had already ended.")
    return redirect("web:silences")
