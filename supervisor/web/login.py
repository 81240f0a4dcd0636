"""The log-in page, with failed log-ins limited per address and account, and per address.

Only failures count, so a team behind one address logging in all day is not refused;
a refusal says how long to wait and is not itself counted. The address is the client's
as the trusted proxies saw it (client_address.py), never one the client wrote itself.

A try is counted before its password is checked (`rate_limit.take`, atomic) and given
back when the password was right: counting failures after the check let twelve
parallel guesses have their passwords checked against a limit of five.

Past the limits, the password check waits for one of the process's few slots
(password_checks.py); when none is free the answer is 503 with Retry-After, given
before the database is asked anything.
"""

import time

from django.contrib.auth.views import LoginView
from django.http import HttpResponse

from supervisor import rate_limit
from supervisor.client_address import client_address
from supervisor.web import password_checks


class RateLimitedLoginView(LoginView):
    # FormView would take PUT as a POST.
    http_method_names = ["get", "head", "post", "options"]

    def _account(self) -> str:
        """The account the log-in names, as Django looks it up: the form's username field
        strips it and takes its NFKC form (so "ａｎｎ" is ann), and keeps its case (Ann
        and ann may be two users)."""
        field = self.get_form_class()(self.request).fields["username"]
        return field.to_python(self.request.POST.get("username", ""))

    def _limits(self):
        address = client_address(self.request)
        return [
            ("login", f"{address}|{self._account()}", rate_limit.configured("login")),
            ("login_address", address, rate_limit.configured("login_address")),
        ]

    def _give_back(self) -> None:
        for scope, key, rate in self._reserved:
            rate_limit.give_back(scope, key, rate, self._reserved_at)
        self._reserved = []

    def post(self, request, *args, **kwargs):
        # Reserve this try under every limit before anything else, so that parallel
        # tries see each other; a refused one holds no reservation.
        self._reserved_at, self._reserved, waits = time.time(), [], []
        for scope, key, rate in self._limits():
            seconds = rate_limit.take(scope, key, rate, now=self._reserved_at)
            if seconds:
                waits.append(seconds)
            else:
                self._reserved.append((scope, key, rate))
        if waits:
            self._give_back()
            context = self.get_context_data(wait_seconds=max(waits))
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(max(waits))
            return response
        with password_checks.slot() as free:
            if not free:
                self._give_back()  # its password was not checked
                # A page of its own, not the form's template: nothing to render or look up.
                seconds = password_checks.retry_after()
                response = HttpResponse(password_checks.busy_page(seconds), status=503)
                response["Retry-After"] = str(seconds)
                response._has_been_logged = True  # warned once a minute, not per request
                return response
            try:
                return super().post(request, *args, **kwargs)
            except Exception:
                # The database was down, say: the client is told to try again (503), and
                # a try that got no answer is not held against it.
                self._give_back()
                raise

    def form_valid(self, form):
        self._give_back()  # only failures count
        return super().form_valid(form)
