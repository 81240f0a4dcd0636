"""Path converters of the API: ids are any text (contract §2), newlines included, which
Django's own `path` converter (`.+`) does not match."""

from django.urls import register_converter
from django.urls.converters import PathConverter


class AnyText(PathConverter):
    regex = r"[\s\S]+"


register_converter(AnyText, "anytext")
