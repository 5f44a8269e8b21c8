"""Text others wrote, isolated from the page's own text direction (issue 29 item 4).

An entity name, an alias, a literal value, a reason or a note may be written
in a right-to-left script, and text of one direction placed beside text of
another reorders its neighbours: "PaySvc has-version 2.1.0" followed by a
Hebrew value can show the version's digits on the wrong side. Every place
the console shows such text isolates it, so it takes its direction from its
own first strong letter and leaves the page around it as it is:

- ``{{ value|bdi }}`` in HTML: the value, escaped, inside ``<bdi>``;
- ``{{ values|bdi_join:", " }}`` for a list (aliases): each one isolated;
- ``{{ value|fsi }}`` where no markup may go (the page's ``<title>``, SVG
  text): the value between FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE,
  the characters Unicode gives plain text for the same purpose.

Registered as a builtin (settings ``TEMPLATES``), so no template loads it.
"""

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def bdi(value: Any) -> SafeString:
    return format_html("<bdi>{}</bdi>", value)


@register.filter
def bdi_join(values: Iterable[Any], separator: str) -> SafeString:
    return format_html_join(separator, "<bdi>{}</bdi>", ((value,) for value in values))


@register.filter
def fsi(value: Any) -> str:
    return f"\u2068{value}\u2069"
