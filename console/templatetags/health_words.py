"""``{{ run.report|crawler_report }}``: the crawler's report as (label, value) pairs in words.

The report is stored for the crawler's own use (``memories.maintenance.crawler``):
a transaction id and a digest mean nothing to a steward, so they read as what
they are for, and the full pass's time in the one human format.
"""

from datetime import datetime

from django import template

from console.templatetags.when import when

register = template.Library()

_LABELS = {
    "slots walked": "Slots walked",
    "slots changed": "Slots changed",
    "decay threshold": "Decay threshold",
    "walk": "Walk",
    "watermark": "Looked at changes from transaction",
    "basis": "Settings it relied on (vocabulary, decay)",
    "full pass": "Builds on the full pass of",
}


def _value(key: str, value):
    if key == "walk":
        return "every slot (a full pass)" if value == "full" else f"only what changed {value}"
    if key == "basis":
        return f"fingerprint {str(value)[:8]}"
    if key == "full pass":
        try:
            return when(datetime.fromisoformat(str(value)))
        except ValueError:
            return value
    return value


@register.filter
def crawler_report(report):
    return [(_LABELS.get(key, key), _value(key, value)) for key, value in report.items()]
