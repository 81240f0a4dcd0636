"""The admin pages' forms: what an admin may type, checked before a do_* function runs."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote_plus

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password

from supervisor.core.access.roles import ROLE_WORDS, ROLES
from supervisor.core.access.sources import check_connector
from supervisor.core.contract import connectors as registry
from supervisor.core.contract.connectors import SettingsError
from supervisor.core.contract.source_names import (
    ReservedName,
    check_namespace_name,
    check_source_name,
)
from supervisor.core.models import Source

DEFAULT_SCOPES = ["ingest", "read"]
SCOPE_WORDS = {
    "ingest": "ingest — send events",
    "read": "read — read tasks and flags through the API",
    "act": "act — cancel, continue, deliver and act on flags by API (texts only with read)",
    "metrics": "metrics — read the Prometheus figures at /metrics",
}
ROLE_CHOICES = [(role, f"{role} — {ROLE_WORDS[role]}") for role in ROLES]


class AdminForm(forms.Form):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")  # labels as the other pages write them
        super().__init__(*args, **kwargs)


def connector_choices() -> list[tuple[str, str]]:
    return [("", "none (nothing can act for this source's tasks)")] + [
        (name, f"{kind.label} ({name})") for name, kind in sorted(registry.connectors().items())
    ]


# A stored secret is never shown again: the settings field shows this mark in its place,
# and a mark posted back keeps the stored value.
SECRET_MARK = "********"
_SECRET_NAME = re.compile(r"(?i)secret|token|password|passwd|authorization|api[-_]?key")
# In a URL: the user and password before the host, and query values whose name sounds
# like a credential (?token=, ?key=, ?sig=, ?X-Amz-Signature=, ...).
_URL = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://")
_SECRET_PARAMETER = re.compile(
    r"(?i)secret|token|pass|pwd|auth|key|sig|credential|session|jwt|bearer|code"
)


def masked(settings):
    """The settings with every value under a secret-sounding name replaced by the mark,
    and the credentials in every URL."""
    if not isinstance(settings, dict):
        return settings
    return {key: _masked_value(key, value) for key, value in settings.items()}


def _masked_value(key, value):
    if isinstance(value, dict):
        return masked(value)
    if not isinstance(value, str) or not value:
        return value
    if _SECRET_NAME.search(str(key)):
        return SECRET_MARK
    return masked_url(value) if _URL.match(value) else value


def masked_url(url: str) -> str:
    """`url` with its userinfo and secret-sounding query values replaced by the mark;
    the rest (scheme, host, path, other parameters) as written."""
    scheme, _, rest = url.partition("://")
    end = min((at for at in map(rest.find, "/?#") if at >= 0), default=len(rest))
    authority, rest = rest[:end], rest[end:]
    if "@" in authority:
        authority = f"{SECRET_MARK}@{authority.rsplit('@', 1)[1]}"
    rest, hash_, fragment = rest.partition("#")
    path, question, query = rest.partition("?")
    if query:
        query = "&".join(map(_masked_parameter, query.split("&")))
    return f"{scheme}://{authority}{path}{question}{query}{hash_}{fragment}"


def _masked_parameter(pair: str) -> str:
    name, equals, value = pair.partition("=")
    if value and _SECRET_PARAMETER.search(unquote_plus(name)):
        return f"{name}{equals}{SECRET_MARK}"
    return pair


def _unmasked(posted, stored):
    """The posted settings, with each value shown masked and posted back unchanged (a
    mark, a URL with its credentials masked) taken from the stored settings."""
    if not isinstance(posted, dict):
        return posted
    stored = stored if isinstance(stored, dict) else {}
    kept = {}
    for key, value in posted.items():
        if isinstance(value, dict):
            kept[key] = _unmasked(value, stored.get(key))
        elif key in stored and value == _masked_value(key, stored[key]):
            kept[key] = stored[key]
        else:
            kept[key] = value
    return kept


class ConnectorForm(AdminForm):
    """A connector binding: which connector acts for a source's tasks, and its settings.
    `stored` is the source's binding (connector, settings): its secrets are shown masked
    and kept when the mark comes back."""

    connector = forms.ChoiceField(required=False, label="Connector")
    connector_settings = forms.CharField(
        required=False,
        label="Connector settings (JSON object)",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "code"}),
        help_text='For a webhook, say: {"url": "https://…", "secret": "16 characters or more"}.',
    )

    def __init__(self, *args, stored: tuple[str, dict] = ("", {}), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["connector"].choices = connector_choices()
        self.stored = stored

    def clean_connector_settings(self) -> dict:
        text = self.cleaned_data["connector_settings"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError(f"must be a JSON object, not {type(value).__name__}")
        return value

    def clean(self):
        cleaned = super().clean()
        connector = cleaned.get("connector") or ""
        if "connector_settings" in cleaned:
            stored_connector, stored_settings = self.stored
            if connector == stored_connector:
                settings = _unmasked(cleaned["connector_settings"], stored_settings)
                cleaned["connector_settings"] = settings
            if SECRET_MARK in json.dumps(cleaned["connector_settings"]):
                self.add_error(
                    "connector_settings",
                    f"{connector or 'connector'} settings: {SECRET_MARK} stands for a stored "
                    "secret of this connector only; type the secret itself",
                )
                return cleaned
            try:
                cleaned["connector_settings"] = check_connector(
                    connector, cleaned["connector_settings"]
                )
            except SettingsError as exc:
                self.add_error("connector_settings", f"{connector} settings: {exc}")
        return cleaned


class SourceForm(ConnectorForm):
    name = forms.CharField(max_length=200, label="Name")
    namespace = forms.CharField(
        max_length=200,
        required=False,
        label="Namespace",
        widget=forms.TextInput(attrs={"list": "namespace-list"}),
        help_text="Sources of one orchestrator installation share a namespace; "
        "empty: a namespace named like the source.",
    )
    scopes = forms.MultipleChoiceField(
        choices=[(scope, SCOPE_WORDS[scope]) for scope in Source.SCOPES],
        initial=DEFAULT_SCOPES,
        widget=forms.CheckboxSelectMultiple,
        label="Scopes of its token",
    )

    field_order = ["name", "namespace", "scopes", "connector", "connector_settings"]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        try:
            check_source_name(name)
        except ReservedName as exc:
            raise forms.ValidationError(str(exc)) from None
        if Source.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a source named {name!r} exists already")
        return name

    def clean_namespace(self) -> str:
        namespace = self.cleaned_data["namespace"].strip()
        try:
            check_namespace_name(namespace)
        except ReservedName as exc:
            raise forms.ValidationError(str(exc)) from None
        return namespace


class UserForm(AdminForm):
    username = forms.CharField(max_length=150, label="User name")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="viewer", label="Role")
    password = forms.CharField(
        required=False,
        label="Password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Empty: one is generated and shown once.",
    )

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        User = get_user_model()
        User._meta.get_field(User.USERNAME_FIELD).run_validators(username)
        if User.objects.filter(**{User.USERNAME_FIELD: username}).exists():
            raise forms.ValidationError(f"a user named {username!r} exists already")
        return username

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if password:
            validate_password(password)
        return password


class RoleForm(AdminForm):
    role = forms.ChoiceField(choices=[(role, role) for role in ROLES], label="Role")


class ReplayForm(AdminForm):
    body = forms.CharField(
        label="Body to replay",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false", "class": "code"}),
        help_text="One event (a JSON object), a JSON array of events, or one event per line.",
    )
