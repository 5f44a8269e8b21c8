"""Issue 30: one human format for times, with the zone; evidence URLs as safe links."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from django.template import Context, Template
from django.utils import timezone

from console.templatetags.evidence import evidence_ref
from console.templatetags.when import times_when, when
from memories.core.when import human_time

AT = datetime(2026, 11, 3, 14, 5, 9, tzinfo=UTC)


def test_one_human_format_with_the_zone():
    assert human_time(AT) == "3 Nov 2026, 14:05 UTC"
    assert human_time(AT, ZoneInfo("Europe/Paris")) == "3 Nov 2026, 15:05 CET"


def test_the_filter_uses_the_active_time_zone():
    assert when(AT) == "3 Nov 2026, 14:05 UTC"
    with timezone.override(ZoneInfo("America/New_York")):
        assert when(AT) == "3 Nov 2026, 09:05 EST"
    assert when(None) == ""


def test_an_explanation_built_in_python_loses_its_raw_iso_times():
    text = (
        "The latest verdict is admitted, by stella at 2026-11-03T14:05:09+00:00 (record ab12cd34)."
    )
    assert times_when(text) == (
        "The latest verdict is admitted, by stella at 3 Nov 2026, 14:05 UTC (record ab12cd34)."
    )


def test_a_web_address_is_a_link_that_passes_nothing_on():
    html = evidence_ref("https://ci.example.org/b/1?x=<1>")
    assert html == (
        '<a href="https://ci.example.org/b/1?x=&lt;1&gt;" rel="noopener noreferrer nofollow">'
        "<code>https://ci.example.org/b/1?x=&lt;1&gt;</code></a>"
    )


def test_other_references_stay_code():
    assert evidence_ref("ADR-12") == "<code>ADR-12</code>"
    assert evidence_ref("javascript:alert(1)") == "<code>javascript:alert(1)</code>"
    assert evidence_ref("http:nohost") == "<code>http:nohost</code>"


def test_the_include_shows_the_when_format():
    out = Template('{% include "console/includes/when.html" with t=t %}').render(Context({"t": AT}))
    assert ">3 Nov 2026, 14:05 UTC</time>" in out


def test_the_crawler_report_reads_in_words():
    from console.templatetags.health_words import crawler_report

    lines = dict(
        crawler_report(
            {
                "walk": "since run 4",
                "watermark": 1082,
                "basis": "ab12cd34ef56",
                "full pass": AT.isoformat(),
            }
        )
    )
    assert lines == {
        "Walk": "only what changed since run 4",
        "Looked at changes from transaction": 1082,
        "Settings it relied on (vocabulary, decay)": "fingerprint ab12cd34",
        "Builds on the full pass of": "3 Nov 2026, 14:05 UTC",
    }
