"""The signed link in a message: GET shows the flag and asks; POST acknowledges or
snoozes it. The signature (24 h by default) stands in for a login, and says which flag."""

from __future__ import annotations

from datetime import timedelta

from django.core import signing
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from supervisor.core import clock
from supervisor.core.flags.kinds import kind_of
from supervisor.core.flags.writers import FlagActionError, do_acknowledge_flag, do_snooze_flag
from supervisor.core.models import Flag
from supervisor.notify.content import flag_from_token, subject_page

SNOOZES = {"1h": 1, "4h": 4, "24h": 24}


@require_http_methods(["GET", "POST"])
def flag_link(request, token: str):
    try:
        flag_pk = flag_from_token(token)
    except signing.SignatureExpired:
        return _refuse(request, "This link has expired. Open the task page to act on the flag.")
    except signing.BadSignature:
        return _refuse(request, "This link is not valid.")
    flag = Flag.objects.select_related("task").filter(pk=flag_pk).first()
    if flag is None:
        return _refuse(request, "This flag no longer exists.", status=404)
    done, error = None, None
    if request.method == "POST":
        now = clock.now()
        actor = "signed link"
        choice = request.POST.get("action", "")
        try:
            if choice == "acknowledge":
                flag = do_acknowledge_flag(flag, now, actor=actor)
                done = "Acknowledged: no more reminders for this flag."
            elif choice in SNOOZES:
                until = now + timedelta(hours=SNOOZES[choice])
                flag = do_snooze_flag(flag, until, now, actor=actor)
                done = f"Snoozed until {until:%Y-%m-%d %H:%M} UTC."
            else:
                error = "Choose acknowledge or a snooze."
        except FlagActionError as exc:
            error = str(exc)
    page, url = subject_page(flag)
    return render(
        request,
        "notify/flag_link.html",
        {
            "flag": flag,
            "words": kind_of(flag.kind),
            "subject_page": page.lower(),
            "subject_url": url,
            "done": done,
            "error": error,
            "snoozes": SNOOZES,
        },
        status=400 if error else 200,
    )


def _refuse(request, message: str, status: int = 403):
    return render(request, "notify/flag_link.html", {"refusal": message}, status=status)
