"""The webhook connector: each action is POSTed, signed, to a URL the operator chose; the
receiver decides what to do with it (message a thread, stop its work).

Body: `{"type": "supervisor.action", "action": Outgoing.as_json()}` as compact JSON with
sorted keys, in UTF-8. Headers: `Supervisor-Signature` (see `signing`), `Idempotency-Key`
(the receiver must take a key once), `User-Agent: Supervisor-webhook/1`, and any
configured in the settings.

The source page's connection test sends `{"type": "supervisor.probe", "probe":
{"source", "at"}}`, signed the same way under a key of its own: a receiver answers it
2xx once the signature checks, and acts on nothing.

Every request passes the outbound guard (`supervisor/core/outbound.py`): the URL's
address is checked after resolution, before the socket connects, and a refusal is a
permanent ConnectorError naming the address. Redirects are never followed.

One call is one attempt: the Celery task that calls it retries with backoff, guided by
`ConnectorError.retryable`.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Any
from urllib.parse import urlsplit

from supervisor.core import outbound
from supervisor.core.contract.connectors import (
    Capabilities,
    Connector,
    ConnectorError,
    Outgoing,
    Receipt,
    retryable_status,
)

from . import settings as webhook_settings
from . import signing

USER_AGENT = "Supervisor-webhook/1"
PROBE_TYPE = "supervisor.probe"
DETAIL_LIMIT = 2000
# Enough for any sensible answer; a receiver streaming megabytes does not fill our memory.
READ_LIMIT = 64 * 1024
# Statuses that say "not now" rather than "no": trying again later may succeed.


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would re-send a signed action somewhere the operator did not configure.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


# No ProxyHandler from the environment: a signed action goes straight to the configured URL.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects())


class WebhookConnector(Connector):
    name = "webhook"
    label = "Webhook"

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return webhook_settings.check_settings(settings)

    def capabilities(self) -> Capabilities:
        # The receiver decides what each action means for its orchestrator.
        return Capabilities(message=True, stop=True)

    def send_message(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        return self.post(outgoing, timeout=timeout)

    def stop_run(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        return self.post(outgoing, timeout=timeout)

    def post(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        """POST `outgoing` once; a Receipt on 2xx, ConnectorError otherwise."""
        url = self.settings["url"]
        # The caller's budget (its task time limit) and the operator's limit both hold.
        timeout = min(timeout, self.settings["timeout"])
        request = self._signed(encode(outgoing), outgoing.idempotency_key)
        try:
            with outbound.guard(), _opener.open(request, timeout=timeout) as response:
                return receipt(response.status, read_text(response))
        except urllib.error.HTTPError as exc:
            with exc:  # it holds the connection open until closed
                raise refusal(exc.code, read_text(exc)) from None
        except urllib.error.URLError as exc:
            raise unreachable(url, exc.reason, timeout, connected=False) from None
        except (OSError, http.client.HTTPException) as exc:
            # Raised past urllib's wrapping while waiting for or reading the answer.
            raise unreachable(url, exc, timeout, connected=True) from None

    def check_connection(self, *, timeout: float) -> str:
        """POST a signed probe (`{"type": "supervisor.probe", ...}`, acting on nothing)
        and say what answered: 2xx is a receiver that took the signature; a refused
        connection, a timeout or any other status is a ConnectorError naming the URL."""
        url = self.settings["url"]
        timeout = min(timeout, self.settings["timeout"])
        started = time.monotonic()
        request = self._signed(encode_probe(self.source), f"probe-{uuid.uuid4().hex}")
        try:
            with outbound.guard(), _opener.open(request, timeout=timeout) as response:
                status = response.status
                read_text(response)
        except urllib.error.HTTPError as exc:
            with exc:
                text = read_text(exc)
            raise probe_refusal(url, exc.code, text) from None
        except urllib.error.URLError as exc:
            raise unreachable(url, exc.reason, timeout, connected=False) from None
        except (OSError, http.client.HTTPException) as exc:
            raise unreachable(url, exc, timeout, connected=True) from None
        took = (time.monotonic() - started) * 1000
        return f"webhook {where(url)} took a signed probe: answered {status} in {took:.0f} ms"

    def _signed(self, body: bytes, key: str) -> urllib.request.Request:
        request = urllib.request.Request(self.settings["url"], data=body, method="POST")
        for name, value in self.settings["headers"].items():
            request.add_header(name, value)
        request.add_header("Content-Type", "application/json")
        request.add_header("User-Agent", USER_AGENT)
        request.add_header(signing.IDEMPOTENCY_HEADER, key)
        # Real time, not core.clock: the receiver checks the timestamp against its own clock.
        request.add_header(signing.HEADER, signing.sign(self.settings["secret"], body))
        return request


def encode_probe(source) -> bytes:
    """A connection test's body: receivers answer it 2xx after checking the signature,
    and act on nothing."""
    document = {
        "type": PROBE_TYPE,
        "probe": {"source": getattr(source, "name", None), "at": int(time.time())},
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8")


def probe_refusal(url: str, status: int, text: str) -> ConnectorError:
    excerpt = without_secrets(text[:200].strip(), url) or "(empty body)"
    if status == 401:
        return ConnectorError(
            f"webhook {where(url)} refused the signature (401: {excerpt}): "
            f"does the receiver have the same secret?",
            retryable=False,
        )
    if 300 <= status < 400:
        return ConnectorError(
            f"webhook {where(url)} answered {status}, a redirect, which is not followed: "
            f"set the url to where the receiver really is",
            retryable=False,
        )
    return ConnectorError(f"webhook {where(url)} answered {status}: {excerpt}", retryable=False)


def encode(outgoing: Outgoing) -> bytes:
    document = {"type": "supervisor.action", "action": outgoing.as_json()}
    return json.dumps(document, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode(
        "utf-8"
    )


def read_text(response) -> str:
    try:
        return response.read(READ_LIMIT).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return ""


def receipt(status: int, text: str) -> Receipt:
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    duplicate = bool(answer.get("duplicate")) if isinstance(answer, dict) else False
    return Receipt(status=str(status), detail=text[:DETAIL_LIMIT], duplicate=duplicate)


def refusal(status: int, text: str) -> ConnectorError:
    excerpt = text[:DETAIL_LIMIT]
    if 300 <= status < 400:
        return ConnectorError(
            f"webhook answered {status}, a redirect, which is not followed: "
            f"set the url to where the receiver really is",
            retryable=False,
            detail=excerpt,
        )
    retryable = retryable_status(status)
    return ConnectorError(
        f"webhook answered {status}: {excerpt[:200].strip() or '(empty body)'}",
        retryable=retryable,
        detail=excerpt,
    )


def unreachable(url: str, reason: object, timeout: float, *, connected: bool) -> ConnectorError:
    if isinstance(reason, outbound.OutboundRefused):
        # Refused before connecting; the settings or DNS must change first.
        return ConnectorError(f"webhook {where(url)} was not sent: {reason}", retryable=False)
    # Retryable even when the request may have arrived: the receiver dedupes by key.
    if isinstance(reason, TimeoutError):
        return ConnectorError(f"webhook {where(url)} timed out after {timeout:g} s", retryable=True)
    why = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    why = without_secrets(why, url)
    if connected:
        return ConnectorError(f"lost the connection to {where(url)}: {why}", retryable=True)
    return ConnectorError(f"could not connect to {where(url)}: {why}", retryable=True)


def without_secrets(text: str, url: str) -> str:
    """`text` with the URL's user, password and query masked: http.client's own errors
    quote the part of the URL it could not parse ("nonnumeric port: 'pw@host'")."""
    parts = urlsplit(url)
    for secret in (parts.password, parts.username, parts.query):
        if secret:
            text = text.replace(secret, "********")
    return text


def where(url: str) -> str:
    """`url` without credentials or query string, which may hold secrets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
