"""``{{ ref|evidence_ref }}``: an evidence reference as code; a link when it is an http(s) URL."""

from urllib.parse import urlsplit

from django import template
from django.utils.html import format_html

register = template.Library()


def is_web_address(ref: str) -> bool:
    parts = urlsplit(ref)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@register.filter
def evidence_ref(ref):
    ref = str(ref)
    if is_web_address(ref):
        return format_html(
            '<a href="{}" rel="noopener noreferrer nofollow"><code>{}</code></a>', ref, ref
        )
    return format_html("<code>{}</code>", ref)
