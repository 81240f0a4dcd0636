"""T3's WebSocket API as Supervisor speaks it: Effect RPC frames over `GET /ws`, one call
per connection, synchronous, within a deadline, every failure sorted into "try again
later" or "no".

What this module assumes of T3 (orchestration protocol 2, Effect 4's RPC), all in one
place so that a real install that differs is one change away:

- Upgrade: `GET <url>?orchestrationProtocol=2` with `Authorization: Bearer <token>` (a
  token from `t3 auth session issue`). T3 answers 401 to a bad token and 426 to a client
  that does not speak protocol 2. (Browsers trade the token for a one-time `wsTicket`
  first; T3 also takes the header on the upgrade itself.)
- Client frames, one JSON object per text frame: `{"_tag": "Request", "id": "1", "tag":
  <method>, "payload": {...}, "headers": []}`, `{"_tag": "Ack", "requestId": "1"}` after
  each chunk of a stream, `{"_tag": "Ping"}` (answered `{"_tag": "Pong"}`) and `Pong`.
- Server frames: `{"_tag": "Chunk", "requestId", "values": [...]}`; `{"_tag": "Exit",
  "requestId", "exit": {"_tag": "Success", "value": ...}}` or `{..., "exit": {"_tag":
  "Failure", "cause": [{"_tag": "Fail", "error": {"_tag", "message", "detail"?}} |
  {"_tag": "Die", "defect"} | {"_tag": "Interrupt"}]}}`; `{"_tag": "Defect", "defect"}`
  for a request it could not route; `Ping` / `Pong`. Effect 3's cause tree (`Sequential`
  / `Parallel` with `left` and `right`) is read too.
- A failure is T3 refusing (not retryable) unless it says otherwise: an `Interrupt`
  (the server stopped the call, e.g. while restarting) or an error that carries
  `retryable: true` or `transient: true`.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.sync.client import ClientConnection, connect

from supervisor.core.contract.connectors import ConnectorError, retryable_status

PROTOCOL_PARAM = "orchestrationProtocol"
PROTOCOL_VERSION = "2"
REQUEST_ID = "1"  # one request per connection
USER_AGENT = "Supervisor-t3code/1"
DETAIL_LIMIT = 2000
MAX_FRAME = 4 * 1024 * 1024  # answers to a command are small; a runaway stream is not read
# Statuses of the upgrade that say "not now" rather than "no".


@dataclass(frozen=True)
class Reply:
    """What T3 answered to one call: the Exit's value, and any streamed values before it."""

    value: Any
    chunks: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Answered:
    """Who answered a ping, and how fast."""

    where: str
    seconds: float
    server: str | None  # the upgrade's Server header, when it sends one


def call(url: str, token: str, method: str, payload: Any, *, timeout: float) -> Reply:
    """Send one Request and wait for its Exit; the Reply on success, ConnectorError else."""
    deadline = time.monotonic() + timeout
    with _open(url, token, deadline, timeout) as socket:
        frame = {"_tag": "Request", "id": REQUEST_ID, "tag": method, "payload": payload}
        _send(socket, url, frame | {"headers": []})
        chunks: list[Any] = []
        while True:
            text, frames = _receive(socket, url, deadline, timeout, sent=True)
            for message in frames:
                tag = message.get("_tag")
                if tag == "Defect":
                    raise _defect(message)
                if tag == "ClientProtocolError":
                    raise ConnectorError(
                        f"T3 refused the call as malformed: {_text(message.get('error'))}",
                        retryable=False,
                        detail=text[:DETAIL_LIMIT],
                    )
                if str(message.get("requestId")) != REQUEST_ID:
                    continue  # Pong, or the answer to a call that is not ours
                if tag == "Chunk":
                    chunks.extend(message.get("values") or [])
                    _send(socket, url, {"_tag": "Ack", "requestId": REQUEST_ID})
                elif tag == "Exit":
                    return _exit(message.get("exit"), chunks, text)


def ping(url: str, token: str, *, timeout: float) -> Answered:
    """Upgrade (which checks the token and the protocol) and exchange an RPC Ping for a
    Pong: proof that T3's RPC server, not just any WebSocket, is at `url`. Acts on nothing."""
    started = time.monotonic()
    deadline = started + timeout
    with _open(url, token, deadline, timeout) as socket:
        server = socket.response.headers.get("Server") if socket.response else None
        _send(socket, url, {"_tag": "Ping"})
        while True:
            _, frames = _receive(socket, url, deadline, timeout, sent=False)
            if any(message.get("_tag") == "Pong" for message in frames):
                return Answered(where(url), time.monotonic() - started, server)


# --- the connection -----------------------------------------------------------------


def socket_url(url: str) -> str:
    """`url` with `orchestrationProtocol=2` added: T3 serves /ws only to protocol 2 clients."""
    parts = urlsplit(url)
    query = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != PROTOCOL_PARAM
    ]
    query.append((PROTOCOL_PARAM, PROTOCOL_VERSION))
    return urlunsplit(parts._replace(query=urlencode(query)))


@contextmanager
def _open(url: str, token: str, deadline: float, timeout: float) -> Iterator[ClientConnection]:
    try:
        socket = connect(
            socket_url(url),
            additional_headers={"Authorization": f"Bearer {token}"},
            user_agent_header=USER_AGENT,
            # Straight to the configured URL: a proxy from the environment would see the token.
            proxy=None,
            open_timeout=max(deadline - time.monotonic(), 0.001),
            close_timeout=1,
            max_size=MAX_FRAME,
        )
    except InvalidStatus as exc:
        raise _upgrade_refused(url, exc.response.status_code, exc.response.body) from None
    except TimeoutError:
        raise ConnectorError(
            f"T3 did not complete the WebSocket upgrade within {timeout:g} s ({where(url)})",
            retryable=True,
        ) from None
    except ssl.SSLCertVerificationError as exc:
        # A certificate that does not verify will not change by itself: retrying does not help.
        raise ConnectorError(f"TLS with {where(url)} failed: {exc}", retryable=False) from None
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise ConnectorError(
            f"could not connect to T3 at {where(url)}: {why}", retryable=True
        ) from None
    except InvalidURI as exc:
        raise ConnectorError(f"url: {exc}", retryable=False) from None
    except InvalidHandshake as exc:
        # The connection broke during the upgrade, or what answered is not a WebSocket server.
        raise ConnectorError(
            f"the WebSocket upgrade at {where(url)} failed: {exc}", retryable=True
        ) from None
    with socket:
        yield socket


def _send(socket: ClientConnection, url: str, frame: dict) -> None:
    try:
        socket.send(json.dumps(frame, ensure_ascii=False, separators=(",", ":")))
    except ConnectionClosed as exc:
        raise _closed(url, exc, sent=False) from None


def _receive(
    socket: ClientConnection, url: str, deadline: float, timeout: float, *, sent: bool
) -> tuple[str, list[dict]]:
    """The next frame's text and the messages in it; answers Pings on the way."""
    while True:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            data = socket.recv(timeout=remaining)
        except TimeoutError:
            raise ConnectorError(
                f"T3 did not answer within {timeout:g} s ({where(url)})",
                retryable=True,
                # Retrying is safe: T3 takes a command id once.
                detail="the call may still be taken by T3; a retry sends the same command id",
            ) from None
        except ConnectionClosed as exc:
            raise _closed(url, exc, sent=sent) from None
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        try:
            parsed = json.loads(text)
        except ValueError:
            raise ConnectorError(
                f"T3 sent a frame that is not JSON: it does not speak Effect RPC at {where(url)}",
                retryable=False,
                detail=text[:DETAIL_LIMIT],
            ) from None
        # Effect's JSON serialization may batch several messages in one frame.
        frames = [
            m for m in (parsed if isinstance(parsed, list) else [parsed]) if isinstance(m, dict)
        ]
        for message in frames:
            if message.get("_tag") == "Ping":
                _send(socket, url, {"_tag": "Pong"})
        return text, frames


# --- what T3 answered ---------------------------------------------------------------


def _exit(exit: Any, chunks: list[Any], text: str) -> Reply:
    if isinstance(exit, dict) and exit.get("_tag") == "Success":
        return Reply(value=exit.get("value"), chunks=chunks)
    cause = exit.get("cause") if isinstance(exit, dict) else None
    raise _failure(list(_reasons(cause)), text)


def _reasons(cause: Any) -> Iterator[dict]:
    """The reasons of a cause: Effect 4 sends a list, Effect 3 a tree."""
    if isinstance(cause, list):
        for reason in cause:
            yield from _reasons(reason)
    elif isinstance(cause, dict):
        if cause.get("_tag") in ("Sequential", "Parallel"):
            yield from _reasons(cause.get("left"))
            yield from _reasons(cause.get("right"))
        elif cause.get("_tag") != "Empty":
            yield cause


def _failure(reasons: list[dict], text: str) -> ConnectorError:
    detail = text[:DETAIL_LIMIT]
    fails = [r.get("error") for r in reasons if r.get("_tag") == "Fail"]
    if fails:
        error = fails[0]
        transient = isinstance(error, dict) and (
            error.get("retryable") is True or error.get("transient") is True
        )
        if PREVIOUSLY_REJECTED in _error_text(error):
            # T3 keeps a refused command id refused and hides the first reason: sending it
            # again can never work, and the operator needs to know it is an old refusal.
            return ConnectorError(
                "T3 had already refused this command (same command id) and keeps refusing "
                f"it without saying why again; look at the thread in T3, then ask anew "
                f"(T3 said: {_error_text(error)})",
                retryable=False,
                detail=detail,
            )
        return ConnectorError(
            f"T3 refused: {_error_text(error)}", retryable=transient, detail=detail
        )
    dies = [r.get("defect") for r in reasons if r.get("_tag") == "Die"]
    if dies:
        # A defect is also how T3 answers a payload its schema does not decode: not transient.
        return ConnectorError(f"T3 refused: {_text(dies[0])}", retryable=False, detail=detail)
    if any(r.get("_tag") == "Interrupt" for r in reasons):
        return ConnectorError(
            "T3 interrupted the call before finishing it (is it restarting?)",
            retryable=True,
            detail=detail,
        )
    return ConnectorError("T3 refused the call without saying why", retryable=False, detail=detail)


PREVIOUSLY_REJECTED = "was previously rejected"


def _defect(message: dict) -> ConnectorError:
    # Sent for a request T3 could not route, e.g. a method this version does not have.
    return ConnectorError(
        f"T3 refused: {_text(message.get('defect'))}",
        retryable=False,
        detail=json.dumps(message)[:DETAIL_LIMIT],
    )


def _error_text(error: Any) -> str:
    """An error's own words: its message, and its detail when that says more."""
    if not isinstance(error, dict):
        return _text(error)
    said = [str(error.get(key) or "").strip() for key in ("message", "detail")]
    said = list(dict.fromkeys(part for part in said if part))  # a detail that repeats adds nothing
    return ": ".join(said) or str(error.get("_tag") or json.dumps(error))[:200]


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return _error_text(value)
    if isinstance(value, str):
        return value.strip()[:500] or "(no message)"
    return json.dumps(value)[:500]


def _upgrade_refused(url: str, status: int, body: bytes | None) -> ConnectorError:
    text = (body or b"").decode("utf-8", errors="replace")
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    said = _error_text(answer) if isinstance(answer, dict) else text.strip()[:200]
    said = said or "(empty body)"
    detail = text[:DETAIL_LIMIT]
    if status in (401, 403):
        return ConnectorError(
            f"T3 refused the token: {status} {said}", retryable=False, detail=detail
        )
    if status == 426:
        return ConnectorError(
            f"T3 refused the connection: {status} {said} (Supervisor speaks orchestration "
            f"protocol {PROTOCOL_VERSION})",
            retryable=False,
            detail=detail,
        )
    retryable = retryable_status(status)
    return ConnectorError(
        f"T3 answered {status} to the WebSocket upgrade at {where(url)}: {said}",
        retryable=retryable,
        detail=detail,
    )


def _closed(url: str, exc: ConnectionClosed, *, sent: bool) -> ConnectorError:
    if exc.rcvd is None:
        why = "no close frame"
    else:
        why = f"code {exc.rcvd.code}" + (f": {exc.rcvd.reason}" if exc.rcvd.reason else "")
    return ConnectorError(
        f"T3 closed the connection at {where(url)} before answering ({why})",
        # Retryable even once sent: T3 takes a command id once.
        retryable=True,
        detail="the call may have been taken by T3" if sent else "",
    )


def where(url: str) -> str:
    """`url` without credentials or query string, which may hold secrets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
