"""The server's instructions to every agent: the agents' part of docs/agents.md.

Written once, in the doc a person reads, and served from there: this module
reads the section under the heading ``## For the agent`` when it is imported,
and a missing file or section stops the start (never a server without its
instructions).
"""

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

GUIDE = Path(settings.BASE_DIR) / "docs" / "agents.md"
HEADING = "## For the agent"


def agent_section(text: str, heading: str = HEADING) -> str:
    """The text between ``heading`` and the next heading of its level (or the end)."""
    _, found, rest = text.partition(f"\n{heading}\n")
    if not found:
        raise ImproperlyConfigured(f"{GUIDE} has no section {heading!r}")
    section, _, _ = rest.partition("\n## ")
    return section.strip()


def instructions() -> str:
    try:
        return agent_section(GUIDE.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ImproperlyConfigured(
            f"the agents' instructions are read from {GUIDE}: {exc}"
        ) from exc


INSTRUCTIONS = instructions()
