"""The T3 Code connector's acting side: each action is one `orchestration.dispatchCommand`
call on T3's WebSocket API (`rpc`).

- continue and deliver: `message.dispatch` of the action's text to its target thread
  (the child for continue, the parent for deliver), as a user message; T3 starts a run,
  steers the active one or queues after it (`deliveryIntent: auto`).
- cancel: `queued-run.cancel` of each run queued on the child, then `run.interrupt` of
  its running run, holding the thread's queue where the build can (0.0.33 drops
  `holdQueue`: a run queued meanwhile starts at once, and the outcome says which).

What the server can do is read from it (`environment`: its capabilities), or shows in
its answer to a command (a type it does not have fails to decode), never from its version.

The command id (and the message id) derive from the action's idempotency key: T3 takes a
command id once and answers a resend with the first result, so a worker that dies after
sending and sends again does not deliver twice. Command shapes follow T3's contracts
(`packages/contracts/src/orchestrationV2.ts`, `OrchestrationV2Command`).

One call is one attempt: the worker retries with backoff, guided by
`ConnectorError.retryable`.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

from supervisor.core.contract.connectors import (
    Capabilities,
    Connector,
    ConnectorError,
    Outgoing,
    Receipt,
)

from . import environment, rpc, session
from . import settings as t3_settings

DISPATCH = "orchestration.dispatchCommand"
PROJECTION = "orchestration.getThreadProjection"
UNDER_WAY = ("queued", "preparing", "starting", "running")  # run statuses not yet ended
LEAVING_QUEUE = ("preparing", "starting")  # on the way to running, not started yet
DETAIL_LIMIT = 2000


class T3CodeConnector(Connector):
    name = "t3code"
    label = "T3 Code"

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> dict[str, Any]:
        return t3_settings.check_settings(settings)

    def capabilities(self) -> Capabilities:
        return Capabilities(message=True, stop=True, stop_needs_run=True)

    def send_message(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        if not outgoing.text:
            raise ConnectorError("there is no text to send", retryable=False)
        receipt = self.dispatch(message_dispatch(outgoing), timeout=timeout)
        if outgoing.kind == "deliver":
            disposed = self.dispose_pending(outgoing, timeout=timeout)
            receipt.extra["dispose"] = disposed
            receipt.extra["notes"] = [f"T3's own pending delivery of the task: {disposed}"]
        return receipt

    def queue_on_stop(self, *, timeout: float) -> str | None:
        """Why work queued on a thread may start when its run is stopped; None when T3
        advertises that a stop holds the queue."""
        found = environment.read(
            self.settings["url"], timeout=min(timeout, self.settings["timeout"])
        )
        if found.holds_queue:
            return None
        if found.error:
            return (
                f"T3's capabilities could not be read ({found.error}), so no held queue is assumed"
            )
        version = f" (server {found.server_version})" if found.server_version else ""
        return (
            f"T3{version} advertises no held queue: it starts a thread's queued run once "
            "the running one stops"
        )

    def dispose_pending(self, outgoing: Outgoing, *, timeout: float) -> str:
        """After a delivery by hand, drop T3's own pending delivery of the task, so T3
        never wakes the parent with the same result again. The message is sent by then:
        whatever this answers, the action stands (a failure here must not resend it)."""
        try:
            self.dispatch(completion_dispose(outgoing), timeout=timeout)
        except ConnectorError as exc:
            if not exc.retryable and _unknown_command(exc):
                return "not supported by this T3 build (it has no completion-delivery records)"
            return f"not disposed: {exc}"
        return DISPOSED

    def stop_run(self, outgoing: Outgoing, *, timeout: float) -> Receipt:
        if not outgoing.run_id and not outgoing.queued_runs:
            # T3 stops runs, not threads: without a run there is nothing to name.
            raise ConnectorError(
                "no running run of the child is known to stop; wait until its run is "
                "reported, then cancel again",
                retryable=False,
            )
        # Queued work first: a build that drops `holdQueue` starts the queue the moment
        # the running run stops.
        notes = [self.cancel_queued(outgoing, run, timeout=timeout) for run in outgoing.queued_runs]
        if outgoing.run_id and outgoing.run_id not in outgoing.queued_runs:
            receipt = self.dispatch(run_interrupt(outgoing), timeout=timeout)
            if self.queue_on_stop(timeout=timeout) is not None:
                notes.append(self.after_stop(outgoing, timeout=timeout))
        elif any(note.endswith(": cancelled") for note in notes):
            receipt = Receipt(status="ok", detail="queued runs cancelled")
        else:
            raise ConnectorError(
                f"the child has no run under way, and its queued work was not cancelled: "
                f"{'; '.join(notes)}",
                retryable=False,
            )
        if notes:
            receipt.extra["notes"] = notes
        return receipt

    def cancel_queued(self, outgoing: Outgoing, run: str, *, timeout: float) -> str:
        """`queued-run.cancel` of one queued run; what came of it, in words. A refusal is
        noted, not raised: the run may have started since, and the cancel goes on."""
        try:
            self.dispatch(queued_run_cancel(outgoing, run), timeout=timeout)
        except ConnectorError as exc:
            if exc.retryable:
                raise  # the whole cancel is sent again, under the same command ids
            if _unknown_command(exc):
                return (
                    f"queued run {run}: not cancelled, this T3 build has no queued-run.cancel "
                    "(it stays queued and may start)"
                )
            return f"queued run {run}: not cancelled ({exc})"
        return f"queued run {run}: cancelled"

    def after_stop(self, outgoing: Outgoing, *, timeout: float) -> str:
        """What the child's queue did once its run stopped, from T3's projection of the
        thread: on a build that does not hold it, a run queued meanwhile (or one whose
        cancel T3 refused) starts at once. Read for a second or two at most; the stop
        stands whatever this reads."""
        deadline = time.monotonic() + min(timeout, self.settings["timeout"], AFTER_STOP_LIMIT)
        while True:
            try:
                reply = rpc.call(
                    self.settings["url"],
                    self.token(),
                    PROJECTION,
                    {"threadId": outgoing.thread_id},
                    timeout=max(deadline - time.monotonic(), 0.5),
                )
            except ConnectorError as exc:
                return f"what the child's queue did after the stop is not known ({exc})"
            runs = _runs(reply)
            stopped = runs.get(outgoing.run_id or "", {})
            # T3 runs one run of a thread at a time: what started after the stopped run
            # did, started once it stopped (it may have ended since).
            # A run taken off the queue and not yet started (`preparing`, `starting`)
            # is starting now: caught in that moment, it too started after the stop.
            started = [
                run
                for run in runs.values()
                if run["id"] != outgoing.run_id
                and (
                    str(run["startedAt"]) > str(stopped.get("startedAt") or "")
                    if run.get("startedAt")
                    else run.get("status") in LEAVING_QUEUE
                )
            ]
            waiting = [run for run in runs.values() if run.get("status") == "queued"]
            settled = stopped.get("status") not in UNDER_WAY and not waiting
            if settled or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if not stopped.get("startedAt"):
            return (
                f"what the child's queue did after the stop is not known (T3's projection of "
                f"the thread shows no start of run {outgoing.run_id})"
            )
        said = []
        if started:
            said.append("started after the stop: " + _listed(started))
        if waiting:
            said.append("still queued, and may start: " + _listed(waiting))
        if said:
            return "T3 does not hold the child's queue; " + "; ".join(said)
        return "no queued run of the child started after the stop"

    def dispatch(self, command: dict[str, Any], *, timeout: float) -> Receipt:
        """Send `command` once; a Receipt when T3 took it, ConnectorError otherwise."""
        reply = rpc.call(
            self.settings["url"],
            self.token(),
            DISPATCH,
            command,
            # The caller's budget (its task time limit) and the operator's limit both hold.
            timeout=min(timeout, self.settings["timeout"]),
        )
        detail = json.dumps(reply.value, ensure_ascii=False)[:DETAIL_LIMIT]
        return Receipt(
            status="ok",
            detail=detail,
            extra={"command_id": command["commandId"], "answer": reply.value},
        )

    def check_connection(self, *, timeout: float) -> str:
        """Reach T3's RPC server, then ask T3 what the token may do: acting needs
        `orchestration:operate`, and a check that cannot show it says so."""
        limit = min(timeout, self.settings["timeout"])
        answered = rpc.ping(self.settings["url"], self.token(), timeout=limit)
        server = f" (server: {answered.server})" if answered.server else ""
        reached = (
            f"T3 answered at {answered.where}{server}: the token was accepted and its RPC "
            f"server answered a ping in {answered.seconds * 1000:.0f} ms"
        )
        grant = session.ask(self.settings["url"], self.token(), timeout=limit)
        if grant is None:
            return (
                f"{reached}; this T3 build does not say what a token may do (it has no "
                f"{session.SESSION_PATH}), so whether it may act shows at the first action"
            )
        if not grant.may_act:
            scopes = ", ".join(grant.scopes) or "none"
            raise ConnectorError(
                f"T3 accepts the token but it may not act (its scopes: {scopes}): cancel, "
                f"continue and deliver need {session.OPERATE}; issue a token with `t3 auth "
                "session issue --token-only`, which has it",
                retryable=False,
            )
        return f"{reached}; T3 says it may act ({session.OPERATE}){session.until(grant)}"

    def token_expires(self) -> datetime | None:
        grant = session.read_claims(self.settings["token"] or "")
        return grant.expires_at if grant else None

    def token(self) -> str:
        token = self.settings["token"]
        if not token:
            raise ConnectorError(
                "the t3code connector has no token: issue one with `t3 auth session issue "
                "--token-only` and put it in the source's connector settings as token",
                retryable=False,
            )
        return token


# --- the commands -------------------------------------------------------------------


def message_dispatch(outgoing: Outgoing) -> dict[str, Any]:
    """Send `outgoing.text` to `outgoing.thread_id` as a user message."""
    return {
        "type": "message.dispatch",
        "commandId": command_id(outgoing),
        "threadId": outgoing.thread_id,
        # A continue's message is its manual wake (`Outgoing.wake`): the follower knows it
        # again in the run T3 starts or steers it into, which the task then owns.
        "messageId": outgoing.wake
        if outgoing.kind == "continue"
        else derived_id("message", outgoing),
        "text": outgoing.text,
        "attachments": [],
        # What T3's own clients send for a person's message; an operator acted by hand.
        "createdBy": "user",
        "creationSource": "server",
        # T3 decides: start a run when the thread is idle, steer or queue when it is busy.
        "deliveryIntent": "auto",
        "dispatchMode": {"type": "start_immediately"},
    }


def run_interrupt(outgoing: Outgoing) -> dict[str, Any]:
    """Stop `outgoing.run_id`, a run of `outgoing.thread_id`."""
    reason = f"cancelled via Supervisor by {outgoing.actor}"
    if outgoing.reason:
        reason += f": {outgoing.reason}"
    return {
        "type": "run.interrupt",
        "commandId": command_id(outgoing),
        "threadId": outgoing.thread_id,
        "runId": outgoing.run_id,
        "reason": reason,
        # Newer builds start the thread's queued runs right after an interrupt unless told
        # to hold them; builds without the field drop it (facts §9).
        "holdQueue": True,
    }


def queued_run_cancel(outgoing: Outgoing, run: str) -> dict[str, Any]:
    """Cancel `run`, queued on `outgoing.thread_id` (a run not started cannot be
    interrupted: T3 answers "Run … is not interruptible.")."""
    return {
        "type": "queued-run.cancel",
        # One command per run: the run's id, hashed, keeps the command id short.
        "commandId": derived_id(
            f"queued-cancel:{hashlib.sha256(run.encode()).hexdigest()[:16]}", outgoing
        ),
        "threadId": outgoing.thread_id,
        "runId": run,
    }


def completion_dispose(outgoing: Outgoing) -> dict[str, Any]:
    """Drop T3's pending delivery of `outgoing.task_id` to its parent (P006, Z32)."""
    return {
        "type": "delegated_task.completion-delivery.dispose",
        "commandId": derived_id("dispose", outgoing),
        "parentThreadId": outgoing.thread_id,
        "taskId": outgoing.task_id,
    }


DISPOSED = "disposed, so T3 will not wake the parent with this result"
AFTER_STOP_LIMIT = 3.0  # seconds the outcome of a cancel waits for T3's queue to move


def _runs(reply: rpc.Reply) -> dict[str, dict]:
    """The runs of a thread projection, by id (the value, or its last streamed chunk)."""
    value = reply.value if isinstance(reply.value, dict) else None
    if value is None and reply.chunks and isinstance(reply.chunks[-1], dict):
        value = reply.chunks[-1]
    runs = (value or {}).get("runs") or []
    return {r["id"]: r for r in runs if isinstance(r, dict) and isinstance(r.get("id"), str)}


def _listed(runs: list[dict]) -> str:
    ordered = sorted(runs, key=lambda r: (r.get("ordinal") or 0, r["id"]))
    return ", ".join(f"run {r['id']} ({r.get('status') or 'status not said'})" for r in ordered)


def _unknown_command(exc: ConnectorError) -> bool:
    """T3's answer to a command type its schema does not have: a decode failure (a
    defect naming what it expected), not its typed refusal of a command it knows."""
    return "DispatchCommandError" not in exc.detail and "Expected" in str(exc)


def command_id(outgoing: Outgoing) -> str:
    return derived_id("command", outgoing)


DERIVED_KEY_LIMIT = 200  # characters of the encoded key in a derived id


def derived_id(kind: str, outgoing: Outgoing) -> str:
    # T3's derived ids nest other ids percent-encoded; the key may hold any character,
    # and percent-encoding can make it twelve times longer: a long one is hashed.
    key = quote(outgoing.idempotency_key, safe="")
    if len(key) > DERIVED_KEY_LIMIT:
        key = "sha256:" + hashlib.sha256(outgoing.idempotency_key.encode()).hexdigest()
    return f"supervisor:{kind}:{key}"
