"""The alert admin pages' forms: channels and routes, checked before they are saved."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import apprise
from django import forms
from django.core.validators import validate_email

from supervisor.core.contract.source_names import reads_as_internal
from supervisor.core.flags.kinds import kind_of
from supervisor.core.models import Source
from supervisor.notify.channels import target_refusal
from supervisor.notify.models import Channel, Route

from .pages.task_list import FLAG_KINDS


class ChannelForm(forms.ModelForm):
    """A channel. The target is a secret: when editing, the field starts empty (its
    help shows the masked value) and leaving it empty keeps the stored one."""

    class Meta:
        model = Channel
        fields = ["name", "kind", "target"]
        labels = {"name": "Name", "kind": "Kind", "target": "Target"}
        widgets = {
            "target": forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
        }

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.stored_target = self.instance.target if self.instance.pk else ""
        target = self.fields["target"]
        target.help_text = (
            "Apprise: a URL Apprise accepts (json://…, ntfy://…, mailto://…). "
            "Email: addresses separated by commas."
        )
        if self.instance.pk:
            self.initial["target"] = ""
            target.required = False
            target.help_text += f" Stored: {self.instance.masked()} — leave empty to keep it."

    def clean_name(self) -> str:
        return self.cleaned_data["name"].strip()

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind")
        target = (cleaned.get("target") or "").strip()
        if not target:
            if self.stored_target and kind == self.instance.kind:
                cleaned["target"] = self.stored_target
                return cleaned
            self.add_error("target", "Target: give an Apprise URL or email addresses.")
            return cleaned
        if kind == Channel.APPRISE:
            if not apprise.Apprise().add(target):
                self.add_error("target", "Target: Apprise does not accept this URL.")
            elif problem := target_refusal(kind, target):
                self.add_error("target", f"Target: {problem}.")
        elif kind == Channel.EMAIL:
            addresses = [a.strip() for a in target.split(",") if a.strip()]
            bad = []
            for address in addresses:
                try:
                    validate_email(address)
                except forms.ValidationError:
                    bad.append(address)
            if bad or not addresses:
                self.add_error(
                    "target", "Target: not valid email addresses: " + ", ".join(bad or [target])
                )
            else:
                target = ", ".join(addresses)
        cleaned["target"] = target
        return cleaned


def _split(text: str) -> list[str]:
    return sorted({part.strip() for part in text.split(",") if part.strip()})


class ListField(forms.CharField):
    """Comma-separated names as a list; empty means all."""

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return ", ".join(value)
        return value

    def to_python(self, value) -> list[str]:
        return _split(super().to_python(value) or "")


class RouteForm(forms.ModelForm):
    kinds = forms.MultipleChoiceField(
        choices=[(kind, kind_of(kind).title) for kind in FLAG_KINDS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Flag kinds",
        help_text="None ticked: every kind.",
    )
    sources = ListField(
        required=False, label="Sources", help_text="Source names, comma-separated; empty: all."
    )
    environments = ListField(
        required=False, label="Environments", help_text="Comma-separated; empty: all."
    )

    class Meta:
        model = Route
        fields = [
            "name",
            "channel",
            "enabled",
            "kinds",
            "sources",
            "environments",
            "min_severity",
            "quiet_start",
            "quiet_end",
            "quiet_tz",
            "group_window",
            "renotify_every",
            "escalate_after",
            "escalate_to",
        ]
        labels = {
            "name": "Name",
            "channel": "Channel",
            "enabled": "Enabled",
            "min_severity": "Minimum severity",
            "quiet_start": "Quiet hours start",
            "quiet_end": "Quiet hours end",
            "quiet_tz": "Quiet hours time zone",
            "group_window": "Group window (seconds)",
            "renotify_every": "Re-notify every (seconds)",
            "escalate_after": "Escalate after (seconds)",
            "escalate_to": "Escalate to",
        }
        help_texts = {
            "name": "Optional.",
            "quiet_start": "HH:MM; nothing is sent between start and end.",
            "quiet_end": "HH:MM.",
            "quiet_tz": "An IANA time zone, like Europe/Berlin.",
            "renotify_every": "Empty: no re-notifications.",
            "escalate_after": "Empty: no escalation.",
            "escalate_to": "The channel that gets the escalation.",
        }
        widgets = {
            "quiet_start": forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
            "quiet_end": forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        }

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["escalate_to"].empty_label = "none"

    def clean_quiet_tz(self) -> str:
        name = (self.cleaned_data.get("quiet_tz") or "").strip() or "UTC"
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise forms.ValidationError(f"Quiet hours time zone: unknown zone {name!r}.") from None
        return name

    def clean_sources(self) -> list[str]:
        names = self.cleaned_data.get("sources") or []
        known = set(Source.objects.values_list("name", flat=True))
        unknown = [name for name in names if name not in known]
        if unknown:
            listed = ", ".join(sorted(n for n in known if not reads_as_internal(n))) or "none yet"
            raise forms.ValidationError(
                f"Sources: no source is named {', '.join(unknown)} (known: {listed})."
            )
        return names

    def clean_renotify_every(self):
        value = self.cleaned_data.get("renotify_every")
        if value is not None and value < 1:
            raise forms.ValidationError("Re-notify every: at least 1 second, or empty.")
        return value

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("quiet_start"), cleaned.get("quiet_end")
        if (start is None) != (end is None) and "quiet_start" not in self.errors:
            missing = "quiet_end" if end is None else "quiet_start"
            self.add_error(missing, "Quiet hours: give both start and end, or neither.")
        after, to = cleaned.get("escalate_after"), cleaned.get("escalate_to")
        if after is not None and to is None:
            self.add_error("escalate_to", "Escalate to: choose a channel to escalate to.")
        if to is not None and after is None and "escalate_after" not in self.errors:
            self.add_error("escalate_after", "Escalate after: say after how many seconds.")
        return cleaned
