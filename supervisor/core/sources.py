"""Sources and their bearer tokens: made once, stored hashed, found in constant time."""

import hmac
import secrets

from django.db import transaction

from .models import Namespace, Source

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
    """Create a source and return it with its token, which is shown once and never stored."""
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
