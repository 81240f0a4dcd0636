from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic.base import RedirectView

from .api.metrics import metrics
from .api.router import api
from .web.favicon import favicon
from .web.login import RateLimitedLoginView

urlpatterns = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api.urls),
    path("metrics", metrics, name="metrics"),
    path("favicon.svg", favicon, name="favicon"),
    # Browsers ask for /favicon.ico on pages without a link (the API's, an error).
    path("favicon.ico", RedirectView.as_view(url="/favicon.svg", permanent=True)),
    path("", include("supervisor.notify.urls")),
    path("", include("supervisor.web.urls")),
]
