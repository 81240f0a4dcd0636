from django.urls import path

from . import alert_admin_views as admin
from . import alert_views as views

# The alert pages keep their own namespace, "notify", beside web's.
app_name = "notify"

urlpatterns = [
    path("alerts/ack/<str:token>/", views.flag_link, name="flag-link"),
    path("admin/channels/", admin.channels, name="admin-channels"),
    path("admin/channels/new/", admin.channel_create, name="admin-channel-create"),
    path("admin/channels/<int:pk>/", admin.channel_edit, name="admin-channel"),
    path("admin/channels/<int:pk>/enabled/", admin.channel_enabled, name="admin-channel-enabled"),
    path("admin/channels/<int:pk>/test/", admin.channel_test, name="admin-channel-test"),
    path("admin/routes/", admin.routes, name="admin-routes"),
    path("admin/routes/new/", admin.route_create, name="admin-route-create"),
    path("admin/routes/<int:pk>/", admin.route_edit, name="admin-route"),
    path("admin/notifications/", admin.notifications, name="admin-notifications"),
    path(
        "admin/notifications/<int:pk>/retry/",
        admin.notification_retry,
        name="admin-notification-retry",
    ),
]
