"""What a required piece of text is: a reason, a ground, an episode's name.

Every action that must be told why (invalidating, resolving, merging,
withdrawing; a verdict, a challenge, a refutation, a correction) checks its
reason here, so the rule and its refusals read the same everywhere. Built on
``decisions.check_text``, the one statement of what text can be stored.
"""

from typing import Any

from memories.core.decisions import Rejected, check_text

# A reason or ground: room for a paragraph with its references, not a document.
MAX_REASON_LENGTH = 5_000


def required_text(value: Any, field: str, *, limit: int, missing: str = "is required") -> str:
    """``value`` stripped, if it is text with something in it that can be stored.

    Raises :class:`Rejected` naming ``field``, with ``missing`` as the message
    when there is nothing (absent, not given, or only whitespace).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        raise Rejected(field, missing)
    if not isinstance(value, str):
        raise Rejected(field, "must be text")
    value = value.strip()
    check_text(value, field, limit)
    return value


def required_reason(value: Any, field: str = "reason") -> str:
    """A human's reason for an action (a ground, for the admission records): never blank."""
    return required_text(value, field, limit=MAX_REASON_LENGTH, missing="is required: say why")
