from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "supervisor.web"
    label = "web"
