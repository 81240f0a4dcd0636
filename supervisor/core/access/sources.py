"""Sources and their bearer tokens: made once, stored hashed, found in constant time."""

import hmac
import secrets

from django.db import transaction

from supervisor.core import changes, clock
from supervisor.core.access.roles import actor_name
from supervisor.core.changes import ChangeKind
from supervisor.core.contract import connectors as registry
from supervisor.core.contract.connectors import SettingsError
from supervisor.core.contract.source_names import check_namespace_name, check_source_name
from supervisor.core.models import Namespace, Source

TOKEN_PREFIX = "sup_"


class ScopeError(ValueError):
    pass


def parse_scopes(text: str) -> str:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = sorted(set(scopes) - set(Source.SCOPES))
    if unknown or not scopes:
        raise ScopeError(
            f"unknown scope(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(Source.SCOPES)}"
        )
    return ",".join(s for s in Source.SCOPES if s in scopes)


@transaction.atomic
def do_create_source(
    name: str, namespace: str | None = None, scopes: str = "ingest,read", settings=None
) -> tuple[Source, str]:
    """Create a source and return it with its token, which is shown once and never stored.
    Its name is not checked: Supervisor names its own sources (the demo's) so."""
    ns, _ = Namespace.objects.get_or_create(name=namespace or name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    source = Source.objects.create(
        name=name,
        namespace=ns,
        token_hash=Source.hash_token(token),
        token_prefix=token[:12],
        scopes=parse_scopes(scopes),
        settings=settings or {},
    )
    return source, token


def source_for_token(token: str) -> Source | None:
    """The live source whose token this is, or None."""
    digest = Source.hash_token(token)
    source = (
        Source.objects.select_related("namespace")
        .filter(token_hash=digest, revoked_at__isnull=True)
        .first()
    )
    # The lookup is by a hash of the whole token; compare again in constant time anyway.
    if source is None or not hmac.compare_digest(source.token_hash, digest):
        return None
    return source


# --- by hand, from the admin pages: each write appends a Change row for the audit ---------


def _subject(source: Source, by) -> changes.Subject:
    return changes.Subject("source", source.name, source.namespace_id, {"actor": actor_name(by)})


def check_connector(connector: str, settings) -> dict:
    """The settings to store for `connector` ("" for none); SettingsError naming the
    connector and the wrong field when they do not pass its check_settings."""
    if not connector:
        return {}
    kind = registry.connectors().get(connector)
    if kind is None:
        raise SettingsError(
            f"connector: {connector!r} does not exist; "
            f"choose from {', '.join(sorted(registry.connectors()))}"
        )
    if not isinstance(settings, dict):
        raise SettingsError(f"{connector} settings: must be a JSON object")
    kind.check_settings(settings)
    # What was given is kept (the connector applies its defaults when it is set up).
    return settings


@transaction.atomic
def do_add_source(
    name: str,
    namespace: str | None,
    scopes: str,
    connector: str = "",
    connector_settings=None,
    *,
    settings=None,
    by=None,
) -> tuple[Source, str]:
    """Create a source with a connector binding (and detection `settings`), recorded;
    returns it with its token, which is shown once and never stored. The admin page and
    `manage.py create_source` create sources so; replays and tests use do_create_source.
    ReservedName when the name or namespace is one Supervisor keeps for its own."""
    check_source_name(name)
    check_namespace_name(namespace or name)
    connector_settings = check_connector(connector, connector_settings or {})
    source, token = do_create_source(name, namespace, scopes, settings=settings)
    if connector:
        source.connector, source.connector_settings = connector, connector_settings
        source.save(update_fields=["connector", "connector_settings"])
    changes.record(
        ChangeKind.SOURCE_CREATED,
        _subject(source, by),
        namespace=source.namespace.name,
        scopes=source.scopes,
        connector=source.connector,
        token_prefix=source.token_prefix,
    )
    return source, token


@transaction.atomic
def do_revoke_source(source: Source, *, by=None) -> bool:
    """Revoke the source's token (compare-and-swap); False if it was revoked already."""
    now = clock.now()
    revoked = Source.objects.filter(pk=source.pk, revoked_at__isnull=True).update(revoked_at=now)
    if revoked:
        source.revoked_at = now
        changes.record(
            ChangeKind.SOURCE_REVOKED, _subject(source, by), token_prefix=source.token_prefix
        )
    return bool(revoked)


@transaction.atomic
def do_rotate_token(source: Source, *, by=None) -> str:
    """Give the source a new token (the old one stops working at once) and return it;
    a revoked source becomes live again with the new token."""
    source = Source.objects.select_for_update().get(pk=source.pk)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    previous = source.token_prefix
    source.token_hash, source.token_prefix = Source.hash_token(token), token[:12]
    was_revoked, source.revoked_at = source.revoked_at is not None, None
    source.save(update_fields=["token_hash", "token_prefix", "revoked_at"])
    changes.record(
        ChangeKind.SOURCE_TOKEN_ROTATED,
        _subject(source, by),
        token_prefix=source.token_prefix,
        previous_prefix=previous,
        was_revoked=was_revoked,
    )
    return token


@transaction.atomic
def do_bind_connector(source: Source, connector: str, settings=None, *, by=None) -> Source:
    """Bind the connector that acts for the source's tasks ("" for none), with settings
    checked by the connector; SettingsError when they are wrong. The settings are not
    recorded in the change log: they may hold a secret."""
    settings = check_connector(connector, settings or {})
    source = Source.objects.select_for_update().get(pk=source.pk)
    previous = source.connector
    source.connector, source.connector_settings = connector, settings
    source.save(update_fields=["connector", "connector_settings"])
    changes.record(
        ChangeKind.SOURCE_CONNECTOR,
        _subject(source, by),
        connector=connector,
        previous=previous,
    )
    return source
