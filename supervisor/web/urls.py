from django.urls import path

from . import action_views, bulk_views, raw_events, saved_views, silence_views, views
from . import admin_views as admin
from .audit_views import audit
from .time_zones import choose_times

app_name = "web"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<int:pk>/", views.task_detail, name="task-detail"),
    path("threads/<int:pk>/", views.thread, name="thread"),
    path("tasks/bulk/", bulk_views.bulk_action, name="bulk-action"),
    path("tasks/<int:pk>/actions/<str:kind>/", action_views.task_action, name="task-action"),
    path("flags/<int:pk>/", views.flag_action, name="flag-action"),
    path("flags/<int:pk>/events/", raw_events.flag_events, name="flag-events"),
    path("tasks/<int:pk>/problem/", views.problem_action, name="problem-action"),
    path("tasks/<int:pk>/assignee/", views.assign_action, name="assign-action"),
    path("views/", saved_views.save_view, name="saved-view-save"),
    path("views/<int:pk>/", saved_views.edit_view, name="saved-view-edit"),
    path("audit/", audit, name="audit"),
    path("times/", choose_times, name="choose-times"),
    path("silences/", silence_views.silence_list, name="silences"),
    path("silences/new/", silence_views.silence_create, name="silence-create"),
    path("silences/<int:pk>/", silence_views.silence_detail, name="silence"),
    path("silences/<int:pk>/end/", silence_views.silence_end, name="silence-end"),
    path("data-as-of/", views.data_as_of, name="data-as-of"),
    path("admin/", admin.admin_home, name="admin"),
    path("admin/sources/", admin.sources, name="admin-sources"),
    path("admin/sources/new/", admin.source_create, name="admin-source-create"),
    path("admin/sources/<int:pk>/", admin.source_detail, name="admin-source"),
    path(
        "admin/sources/<int:pk>/connector/", admin.source_connector, name="admin-source-connector"
    ),
    path("admin/sources/<int:pk>/test/", admin.source_test, name="admin-source-test"),
    path("admin/sources/<int:pk>/revoke/", admin.source_revoke, name="admin-source-revoke"),
    path("admin/sources/<int:pk>/rotate/", admin.source_rotate, name="admin-source-rotate"),
    path("admin/users/", admin.users, name="admin-users"),
    path("admin/users/new/", admin.user_create, name="admin-user-create"),
    path("admin/users/<int:pk>/role/", admin.user_role, name="admin-user-role"),
    path("admin/dead-letters/", admin.dead_letters, name="admin-dead-letters"),
    path("admin/dead-letters/<int:pk>/", admin.dead_letter, name="admin-dead-letter"),
    path(
        "admin/dead-letters/<int:pk>/replay/",
        admin.dead_letter_replay,
        name="admin-dead-letter-replay",
    ),
    path("admin/failures/", admin.sweep_failures, name="admin-failures"),
    # Last: any other address under tasks/ names a task by its id or short id.
    path("tasks/<path:ref>/", views.task_by_id, name="task-by-id"),
]
