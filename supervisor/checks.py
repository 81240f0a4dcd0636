"""System checks that say in plain words what is wrong with the configuration: the
site's settings (services, detection, retention, rate limits, proxies), registered by
the web app (supervisor/web/apps.py), which may import the root modules they read."""

from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Warning, register
from django.core.exceptions import ImproperlyConfigured

from . import client_address, rate_limit


@register()
def check_supervisor_settings(app_configs, **kwargs):
    problems = []
    url = settings.DATABASE_URL
    if url and urlsplit(url).scheme not in {"postgres", "postgresql"}:
        problems.append(
            Error(
                f"DATABASE_URL must start with postgres:// (got {urlsplit(url).scheme}://).",
                hint="Unset it to use the embedded SQLite database under var/.",
                id="supervisor.E001",
            )
        )
    broker = settings.CELERY_BROKER_URL
    if urlsplit(broker).scheme not in {"filesystem", "redis", "rediss", "memory"}:
        problems.append(
            Error(
                f"CELERY_BROKER_URL must be redis://… (got {broker!r}).",
                hint="Unset it to use the embedded filesystem broker under var/.",
                id="supervisor.E002",
            )
        )
    layer = settings.CHANNEL_LAYER_URL
    if layer and urlsplit(layer).scheme not in {"redis", "rediss"}:
        problems.append(
            Error(
                f"CHANNEL_LAYER_URL must be redis://… (got {layer!r}).",
                hint="Unset it to use the in-process channel layer.",
                id="supervisor.E003",
            )
        )
    for name, value in settings.SUPERVISOR_DETECTION.items():
        if value <= 0:
            problems.append(
                Error(
                    f"The detection setting {name} must be a positive number of seconds.",
                    id="supervisor.E004",
                )
            )
    for name, value in settings.SUPERVISOR_RETENTION.items():
        if value < 0:
            problems.append(
                Error(
                    f"The retention of {name} must be a whole number of days, 0 to keep them"
                    f" forever (got {value}).",
                    id="supervisor.E005",
                )
            )
    for kind in settings.SUPERVISOR_RATE_LIMITS:
        try:
            rate_limit.configured(kind)
        except ImproperlyConfigured as exc:
            problems.append(Error(str(exc), id="supervisor.E006"))
    try:
        client_address.trusted_proxies()
    except ImproperlyConfigured as exc:
        problems.append(Error(str(exc), id="supervisor.E008"))
    cache = settings.CACHE_URL
    if cache and urlsplit(cache).scheme not in {"redis", "rediss"}:
        problems.append(
            Error(
                f"CACHE_URL must be redis://… (got {cache!r}).",
                hint="Unset it to keep the rate-limit counters in each process's memory.",
                id="supervisor.E007",
            )
        )
    if not settings.DEBUG and settings.SECRET_KEY and len(settings.SECRET_KEY) < 32:
        problems.append(
            Warning("SECRET_KEY is short; use at least 32 random characters.", id="supervisor.W001")
        )
    return problems
