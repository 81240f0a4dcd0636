from django.urls import path

from . import views

app_name = "web"
urlpatterns = [
    path("", views.overview, name="overview"),
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/<int:pk>/", views.task_detail, name="task-detail"),
    path("threads/<int:pk>/", views.thread, name="thread"),
    path("flags/<int:pk>/", views.flag_action, name="flag-action"),
]
