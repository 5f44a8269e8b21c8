from urllib.parse import urlsplit

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


class NotificationsConfig(AppConfig):
    name = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        register(check_site_url, Tags.compatibility)
        register(check_site_url_is_named, Tags.security, deploy=True)


def check_site_url(app_configs=None, **kwargs) -> list:
    """``CLAIMGRAPH_SITE_URL``, when set, is an origin: http(s), a host, nothing after it."""
    url = settings.CLAIMGRAPH_SITE_URL
    if not url:
        return []
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        return [
            Error(
                f"CLAIMGRAPH_SITE_URL is {url!r}: give the console's origin, such as "
                "https://claimgraph.example.org (http or https, a host, an optional port, no path)",
                id="notifications.E001",
            )
        ]
    return []


def check_site_url_is_named(app_configs=None, **kwargs) -> list:
    """Outside local work the links in webhooks and digests need the console's address."""
    if settings.CLAIMGRAPH_SITE_URL:
        return []
    return [
        Warning(
            "CLAIMGRAPH_SITE_URL is not set: webhook payloads and digest emails would carry "
            "links without the console's address",
            hint="Set CLAIMGRAPH_SITE_URL to the console's origin, e.g. https://claimgraph.example.org",
            id="notifications.W001",
        )
    ]
