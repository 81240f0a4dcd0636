"""What a message says: what happened in one line, the text the parent was given beside
the child's latest result (shortened), the suggested action, one link to the task, and
signed links to acknowledge or snooze. Everything passes `redact` on the way out.

Every line is Supervisor's: an agent's text (a title, an id, a result, evidence) is put
after Supervisor's own words on a line, as one line (`agent_text`), so that it cannot
start a line of its own and forge one (`Task:`, the acknowledge link, `ref:`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.urls import reverse

from supervisor.core.facts import handover
from supervisor.core.facts.loader import load_for_task
from supervisor.core.flags.kinds import CRITICAL, kind_of, severity_of
from supervisor.core.models import Flag, Thread

from .headers import single_line
from .redact import redact

TEXT_LIMIT = 280  # characters of each text in a message; the page has them in full
WORST = 5  # flags listed by name in a grouped message
SALT = "supervisor.notify.flag-link"


@dataclass(frozen=True)
class Message:
    subject: str
    body: str


def base_url() -> str:
    return settings.SUPERVISOR_BASE_URL.rstrip("/")


def agent_text(text: str) -> str:
    """An agent's text as it goes on a line of a message: its secrets cut on their own
    (a key's opening line with no end would otherwise take the message's own lines
    after it), then one line, with no break or hidden character (headers.single_line)."""
    return single_line(redact(text))


def shorten(text: str | None, limit: int = TEXT_LIMIT) -> str:
    if text is None:
        return "(none)"
    flat = agent_text(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# --- signed links -------------------------------------------------------------------


def link_token(flag_pk: int) -> str:
    return signing.TimestampSigner(salt=SALT).sign_object({"flag": flag_pk})


def flag_from_token(token: str) -> int:
    """The flag a link names; raises signing.BadSignature (SignatureExpired when old)."""
    max_age = settings.SUPERVISOR_NOTIFY["link_max_age"]
    return int(signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=max_age)["flag"])


def ack_url(flag: Flag) -> str:
    return base_url() + reverse("notify:flag-link", args=[link_token(flag.pk)])


def task_url(flag: Flag) -> str:
    if flag.task_id:
        return base_url() + reverse("web:task-detail", args=[flag.task_id])
    return base_url() + reverse("web:overview")


def subject_page(flag: Flag) -> tuple[str, str]:
    """(what, url) of the page of the flag's subject: its task, its thread (a thread
    flag has no task page), else the overview."""
    if flag.task_id:
        return "Task", task_url(flag)
    if flag.subject_type == "thread":
        found = Thread.objects.filter(namespace_id=flag.namespace_id, thread_id=flag.subject_id)
        if pk := found.values_list("pk", flat=True).first():
            return "Thread", base_url() + reverse("web:thread", args=[pk])
    return "Overview", task_url(flag)


def subject_link(flag: Flag) -> str:
    what, url = subject_page(flag)
    return f"{what}: {url}"


def evidence_words(flag: Flag) -> str:
    """A flag not on a task: its evidence's words (a task flag's alert quotes the task's
    texts instead, which say more)."""
    evidence = flag.evidence if isinstance(flag.evidence, dict) else {}
    text = evidence.get("text")
    return f"Evidence: {shorten(text)}" if not flag.task_id and isinstance(text, str) else ""


# --- messages -----------------------------------------------------------------------


def one_line(flag: Flag) -> str:
    words = kind_of(flag.kind)
    if flag.task_id:
        title = agent_text(flag.task.title or "") or agent_text(flag.task.task_id)
    else:
        title = agent_text(flag.subject_id)
    return f"[{severity_of(flag.kind)}] {words.title}: {title}"


def _texts(flag: Flag) -> tuple[str, str] | None:
    """What the task page says of a task flag's task: what reached the parent, and the
    latest result with whether it reached it, as the operator sees it (core.facts.reading,
    through core.facts.handover's panels)."""
    if not flag.task_id:
        return None
    snap = load_for_task(flag.task)
    view = snap.tasks.get(flag.task.task_id)
    if view is None:
        return None
    reading = handover.read(snap, view)
    if reading.reached:
        given = shorten(reading.reached[-1].text)
    else:
        given = "nothing has reached the parent yet"
        if reading.not_reached:
            given += f" (reported but not delivered: {shorten(reading.not_reached[-1].text)})"
    latest = reading.latest
    if latest is None:
        return given, "none yet"
    reached = "it has reached the parent" if latest.reached else "it has not reached the parent"
    return given, f"{shorten(latest.text)} ({reached})"


def reset_words(flag: Flag) -> str:
    """An account limit's reset, when its evidence names one: the moment after which
    continuing is worth it."""
    evidence = flag.evidence if isinstance(flag.evidence, dict) else {}
    reset = evidence.get("resets_at")
    return f"The limit resets at {reset[:10]} {reset[11:16]} UTC." if isinstance(reset, str) else ""


def for_flag(flag: Flag, lead: str = "") -> Message:
    words = kind_of(flag.kind)
    texts = _texts(flag)
    lines = [lead + one_line(flag), "", words.meaning]
    if texts:
        lines += ["", f"Given to the parent: {texts[0]}", f"Latest result: {texts[1]}"]
    if evidence := evidence_words(flag):
        lines += ["", evidence]
    if reset := reset_words(flag):
        lines += ["", reset]
    lines += [
        "",
        f"Suggested: {words.advice}",
        subject_link(flag),
        f"Acknowledge or snooze: {ack_url(flag)}",
    ]
    return Message(redact(lead + one_line(flag)), redact("\n".join(lines)))


def for_flags(flags: list[Flag], lead: str = "") -> Message:
    """One flag: its own message. Several: the count, then the worst few."""
    if len(flags) == 1:
        return for_flag(flags[0], lead)
    ordered = sorted(flags, key=lambda f: (severity_of(f.kind) != CRITICAL, f.opened_at, f.pk))
    critical = sum(severity_of(f.kind) == CRITICAL for f in flags)
    subject = f"{lead}{len(flags)} flags opened ({critical} critical)"
    lines = [subject, ""]
    for flag in ordered[:WORST]:
        lines += [
            f"- {one_line(flag)}",
            f"  Suggested: {kind_of(flag.kind).advice}",
            *([f"  {reset}"] if (reset := reset_words(flag)) else []),
            f"  {subject_link(flag)}",
            f"  Acknowledge or snooze: {ack_url(flag)}",
        ]
    if len(flags) > WORST:
        lines += ["", f"… and {len(flags) - WORST} more: {base_url()}{reverse('web:overview')}"]
    return Message(redact(subject), redact("\n".join(lines)))


def for_test(channel_name: str) -> Message:
    return Message(
        "Supervisor: test notification",
        f"A test from Supervisor for channel “{single_line(channel_name)}”: this channel works.",
    )
