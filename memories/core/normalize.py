"""How two spellings of one value are recognised as the same value (SPEC §12).

Pure: no Django, no database. A literal object and an entity's name or alias are
compared by their *key*: Unicode NFKC, case-folded, trimmed, inner whitespace
collapsed to one space. "Trunk-based  development" and "trunk-based development"
share a key and so reinforce one fact instead of opening a conflict; values
that differ in anything but spelling noise keep different keys.
"""

import unicodedata


def value_key(text: str) -> str:
    """The comparison key of a literal or a name."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    # casefold can produce sequences NFKC would compose again ("ß" -> "ss" is
    # fine, but some compatibility characters are not); normalise once more.
    folded = unicodedata.normalize("NFKC", folded)
    return " ".join(folded.split())
