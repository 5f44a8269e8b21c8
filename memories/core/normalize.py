"""How two spellings of one value are recognised as the same value (SPEC §12).

Pure: no Django, no database. A literal object and an entity's name or alias are
compared by their *key*: Unicode NFKC, case-folded, trimmed, inner whitespace
collapsed to one space. "Trunk-based  development" and "trunk-based development"
share a key and so reinforce one fact instead of opening a conflict; values
that differ in anything but spelling noise keep different keys.

A name or a literal value is also stored in NFKC (``shown_form``), and one
that holds a character which is invisible or reorders the text around it is
refused (``hidden_character``): two values that render alike must not be
two different values no conflict check can see.
"""

import unicodedata


def value_key(text: str) -> str:
    """The comparison key of a literal or a name."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    # casefold can produce sequences NFKC would compose again ("ß" -> "ss" is
    # fine, but some compatibility characters are not); normalise once more.
    folded = unicodedata.normalize("NFKC", folded)
    return " ".join(folded.split())


# Characters that draw nothing or reorder what is drawn, beyond Unicode's
# "format" category (Cf: zero-width spaces and joiners, the byte-order mark,
# the bidirectional embeddings, overrides and isolates, tag characters):
# variation selectors, which silently change the glyph of the letter before.
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF), (0x180B, 0x180F))


def hidden_character(text: str, *, line_breaks: bool = False) -> str | None:
    """Why ``text`` cannot be a name or a value, naming its first hidden character; or None.

    Control characters count too; ``line_breaks`` allows tab, line feed and
    carriage return (a long literal may span lines; a name never does).
    """
    if text.isascii() and text.isprintable():
        return None
    for position, character in enumerate(text):
        point = ord(character)
        category = unicodedata.category(character)
        if category == "Cc":
            if line_breaks and character in "\t\n\r":
                continue
            kind = "a control character"
        elif category == "Cf":
            kind = "an invisible or text-direction character"
        elif any(low <= point <= high for low, high in _VARIATION_SELECTORS):
            kind = "a variation selector"
        else:
            continue
        name = unicodedata.name(character, "unnamed")
        return f"must not contain {kind} (U+{point:04X} {name}, at position {position + 1})"
    return None


def shown_form(text: str) -> str:
    """The form a name or a literal value is stored in: NFKC, so compatibility
    spellings (full-width digits, ligatures) are stored as what they show."""
    return unicodedata.normalize("NFKC", text)
