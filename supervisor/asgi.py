import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supervisor.settings")
django_asgi_app = get_asgi_application()

# Imported once Django is set up: they load models.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from supervisor.live.origin import SameOriginValidator  # noqa: E402
from supervisor.live.routing import websocket_urlpatterns  # noqa: E402
from supervisor.web.password_checks import BusyGate  # noqa: E402

application = ProtocolTypeRouter(
    {
        # A log-in past the process's password checks is refused before Django.
        "http": BusyGate(django_asgi_app),
        # Only the site's own origin (scheme, host and port) or a trusted one: see origin.py.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
