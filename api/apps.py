from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The agents' faces: the JSON API and the MCP server (``manage.py mcp``)."""

    name = "api"
