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

Names that only *look* alike are recognised by their *skeleton*
(``name_skeleton``): Unicode's confusable skeleton (UTS #39, computed by ICU
from Unicode's confusables data) of the name's key, so "PaySvc" with a
Cyrillic "a" (U+0430), its full-width spelling and its mathematical letters share one
skeleton with the Latin "PaySvc" (and case and spacing noise still collapse,
as in the key). How an entity is found by a name, in precedence order (the
rule's one statement is ``claimgraph_entity`` in memories/sql/slots.sql, and
the import's set-wise twin is memories/write/ingest.py):

1. an entity of the scope whose key is the name's key;
2. else the earliest entity (lowest id) with the key among its alias keys;
3. else the earliest entity whose name or an alias has the name's skeleton:
   the name *resolves* to that entity, and the write's answer and the audit
   feed say so (the spelling given and the entity it resolved to), so a
   look-alike spelling meets the existing entity's slots and their
   collision rules instead of opening a new slot no conflict check sees;
4. else, when writing, a new entity with that name.

A mixed-script name with no look-alike in its scope is a new entity like
any other. Two entities that were already look-alikes before skeletons were
kept stay two (a steward merges them); a new name resolves to the earlier.
"""

import unicodedata

import icu


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


# One checker for the process: ICU's skeleton is a const operation on it, safe
# from every thread. The skeleton's "type" argument is ignored by ICU since 58
# (one table for every script).
_SPOOF_CHECKER = icu.SpoofChecker()


def name_skeleton(text: str) -> str:
    """The confusable skeleton of a name's key (UTS #39): equal for look-alikes.

    Two names whose skeletons are equal render alike (a Cyrillic or Greek
    letter for a Latin one, a full-width or mathematical letter, "rn" for
    "m", "1" and "l"), so the second is taken as a spelling of the first.
    Not a key to show: the skeleton is in Unicode's decomposed form and its
    letters are prototypes, not the name's own.
    """
    return _SPOOF_CHECKER.getSkeleton(0, value_key(text))
