"""The log-in page, with failed log-ins limited per address and account, and per address.

Only failures count, so a team behind one address logging in all day is not refused;
a refusal says how long to wait and is not itself counted. The address is the client's
as the trusted proxies saw it (client_address.py), never one the client wrote itself.
"""

from django.contrib.auth.views import LoginView

from supervisor import rate_limit
from supervisor.client_address import client_address


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

    def post(self, request, *args, **kwargs):
        seconds = max(rate_limit.wait(scope, key, rate) for scope, key, rate in self._limits())
        if seconds:
            context = self.get_context_data(wait_seconds=seconds)
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(seconds)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        for scope, key, rate in self._limits():
            rate_limit.count(scope, key, rate)
        return super().form_invalid(form)
