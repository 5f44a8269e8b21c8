"""``{{ t|when }}``: a time in the one human format, in the active time zone, with its zone."""

from django import template
from django.utils import timezone

from console.explain import humane_times
from memories.core.when import human_time

register = template.Library()


@register.filter
def when(value):
    if not value:
        return ""
    return human_time(value, timezone.get_current_timezone())


@register.filter
def times_when(text):
    """A sentence built in Python (an admission explanation) with its ISO times as ``when``."""
    return humane_times(str(text), timezone.get_current_timezone())
