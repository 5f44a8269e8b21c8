from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The stewards' HTML face: pages, forms and templates over the domain apps."""

    name = "console"
    verbose_name = "Console"
