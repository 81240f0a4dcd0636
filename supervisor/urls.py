from django.contrib.auth import views as auth_views
from django.urls import include, path

from .api.metrics import metrics
from .api.router import api
from .web.favicon import favicon, favicon_ico
from .web.login import RateLimitedLoginView

urlpatterns = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api.urls),
    path("metrics", metrics, name="metrics"),
    path("favicon.svg", favicon, name="favicon"),
    path("favicon.ico", favicon_ico),
    path("", include("supervisor.web.alert_urls")),
    path("", include("supervisor.web.urls")),
]

handler400 = "supervisor.web.errors.bad_request"
handler403 = "supervisor.web.errors.permission_denied"
handler404 = "supervisor.web.errors.page_not_found"
handler500 = "supervisor.web.errors.server_error"
