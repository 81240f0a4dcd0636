"""One attempt to send one message over one channel: Apprise for URLs, Django's mail
backend for addresses. Failures are raised as SendError, saying whether a retry can help.
Texts that go into a header pass `header_text` first."""

from __future__ import annotations

import smtplib

import apprise
from django.conf import settings
from django.core.mail import EmailMessage

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


def _send_apprise(channel: Channel, subject: str, body: str, timeout: float) -> None:
    target = apprise.Apprise()
    # The URL is a secret: errors name the channel, never the URL.
    if not target.add(channel.target):
        raise SendError(f"channel {channel.name}: Apprise cannot use this URL", retryable=False)
    accepted = True
    for service in target:  # one URL may name several services, each with its format
        # Apprise's own timeouts (connect, read), bounded by ours
        service.socket_connect_timeout = min(service.socket_connect_timeout or timeout, timeout)
        service.socket_read_timeout = min(service.socket_read_timeout or timeout, timeout)
        one = apprise.Apprise()
        one.add(service)
        # The text is text, whatever the service renders (escaping.py).
        title, text, body_format = as_sent_to(service, subject, body)
        sent = one.notify(title=title, body=text, body_format=body_format)
        accepted = bool(sent) and accepted
    if not accepted:
        raise SendError(f"channel {channel.name}: the service did not accept the message")


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
    except smtplib.SMTPRecipientsRefused as exc:
        raise SendError(f"channel {channel.name}: recipients refused", retryable=False) from exc
    except smtplib.SMTPResponseException as exc:
        # 5xx is permanent for this message; 4xx says try later.
        raise SendError(
            f"channel {channel.name}: SMTP {exc.smtp_code}", retryable=exc.smtp_code < 500
        ) from exc
    except (smtplib.SMTPException, OSError) as exc:  # timeouts are OSErrors
        raise SendError(f"channel {channel.name}: {type(exc).__name__}: {exc}") from exc
