from django.urls import path

from . import views

app_name = "notify"

urlpatterns = [
    path("alerts/ack/<str:token>/", views.flag_link, name="flag-link"),
]
