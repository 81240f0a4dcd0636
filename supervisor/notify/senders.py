"""One attempt to send one message over one channel: Apprise for URLs (through the
outbound guard, supervisor/core/outbound.py), Django's mail backend for addresses.
Failures are raised as SendError, saying whether a retry can help (a permanent error: a
bad URL, a message that cannot be encoded, a refusal that will not change, a redirect,
an address the guard refuses). Texts that go into a header pass `header_text` first."""

from __future__ import annotations

import re
import smtplib

import apprise
from django.conf import settings
from django.core.mail import EmailMessage

from supervisor.core import outbound

from .escaping import as_sent_to
from .headers import header_text
from .models import Channel

KEY_HEADER = "X-Supervisor-Key"


class SendError(Exception):
    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


def send(channel: Channel, key: str, subject: str, body: str, *, timeout: float) -> None:
    if channel.kind == Channel.EMAIL:
        _send_email(channel, header_text(key), header_text(subject), body)
    elif channel.kind == Channel.APPRISE:
        _send_apprise(channel, header_text(subject), body, timeout)
    else:
        raise SendError(f"unknown channel kind {channel.kind!r}", retryable=False)


# Apprise's plugins follow redirects unless told not to (requests' default: 30 hops). A
# redirect would re-post the message, signed acknowledge links and all, to wherever it
# points, so none is followed (as the webhook connector); the service sends in this
# thread, where its answer is captured.
ASSET = apprise.AppriseAsset(http_redirects=False, async_mode=False)

# How Apprise's HTTP plugins log a refusal ("…: Not Found, error=404."); only the
# number is kept, since the rest may carry what the service said back.
_STATUS = re.compile(r"\berror=([1-5]\d\d)\b")
# Answers that say "later": a timeout and too many requests; 5xx is the server's trouble.
_LATER = frozenset({408, 425, 429})


def _send_apprise(channel: Channel, subject: str, body: str, timeout: float) -> None:
    target = apprise.Apprise(asset=ASSET)
    # The URL is a secret: errors name the channel, never the URL.
    if not target.add(channel.target):
        raise SendError(f"channel {channel.name}: Apprise cannot use this URL", retryable=False)
    refused: list[SendError] = []
    for service in target:  # one URL may name several services, each with its format
        # Apprise's own timeouts (connect, read), bounded by ours
        service.socket_connect_timeout = min(service.socket_connect_timeout or timeout, timeout)
        service.socket_read_timeout = min(service.socket_read_timeout or timeout, timeout)
        service.redirects = False  # even where the URL says `redirect=yes`
        one = apprise.Apprise(asset=ASSET)
        one.add(service)
        # The text is text, whatever the service renders (escaping.py).
        title, text, body_format = as_sent_to(service, subject, body)
        # Whatever the plugin speaks (HTTP, SMTP, …), each address it resolves and each
        # socket it opens is checked before anything leaves.
        with outbound.guard() as checked:
            sent = one.notify(title=title, body=text, body_format=body_format)
        if checked.refusals:
            refused.append(
                SendError(
                    f"channel {channel.name}: not sent: {checked.refusals[0].without_address()}",
                    retryable=False,
                )
            )
        elif not sent:
            refused.append(_refusal(channel, sent))
    if refused:
        # A retry sends to every service again: worth it only if each refusal may pass.
        permanent = [error for error in refused if not error.retryable]
        raise permanent[0] if permanent else refused[0]


def _refusal(channel: Channel, result) -> SendError:
    """What a service's refusal means, from the HTTP status Apprise logged (if any)."""
    codes = [int(m.group(1)) for e in result.logs() for m in _STATUS.finditer(e.message)]
    if not codes:
        return SendError(f"channel {channel.name}: the service did not accept the message")
    code = codes[-1]
    if 300 <= code < 400:
        return SendError(
            f"channel {channel.name}: the service answered a redirect (HTTP {code}), which "
            "is not followed: set the channel to the address it redirects to",
            retryable=False,
        )
    return SendError(
        f"channel {channel.name}: the service refused the message (HTTP {code})",
        retryable=code >= 500 or code in _LATER,
    )


def _send_email(channel: Channel, key: str, subject: str, body: str) -> None:
    """Through the default mailer (MAILERS, whose OPTIONS carry the timeout)."""
    addresses = channel.addresses()
    if not addresses:
        raise SendError(f"channel {channel.name}: no addresses", retryable=False)
    message = EmailMessage(
        subject=subject,
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=addresses,
        headers={KEY_HEADER: key},
    )
    try:
        message.send()
    except (ValueError, UnicodeError) as exc:  # Django's BadHeaderError is a ValueError
        raise SendError(
            f"channel {channel.name}: the message cannot be sent as written: {exc}",
            retryable=False,
        ) from exc
    except smtplib.SMTPRecipientsRefused as exc:
        raise SendError(f"channel {channel.name}: recipients refused", retryable=False) from exc
    except smtplib.SMTPResponseException as exc:
        # 5xx is permanent for this message; 4xx says try later.
        raise SendError(
            f"channel {channel.name}: SMTP {exc.smtp_code}", retryable=exc.smtp_code < 500
        ) from exc
    except (smtplib.SMTPException, OSError) as exc:  # timeouts are OSErrors
        raise SendError(f"channel {channel.name}: {type(exc).__name__}: {exc}") from exc
