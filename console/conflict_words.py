"""What each kind of conflict means, in a steward's words: the one home of that wording.

The kinds are the write path's and the crawler's reasons for opening a
conflict (``memories.store.models.ConflictKind``, SPEC §2 and §8). The queue, the
conflict page and anything else that names a kind read it from here.
"""

from memories.store.models import ConflictKind

KIND_EXPLANATIONS: dict[str, str] = {
    ConflictKind.COMMITMENT: (
        "A commitment is involved, and a commitment is never overruled "
        "silently: both stand until a steward rules."
    ),
    ConflictKind.BACKDATED: (
        "The newer claim says it began before the standing one, so it cannot "
        "simply replace it: that would leave the older fact valid at no time."
    ),
    ConflictKind.OUTRANKED: (
        "A less trusted source contradicts a more trusted one. It may not end "
        "the trusted fact on its own."
    ),
    ConflictKind.REVENANT: (
        "A low-trust source brings back a value that was already retired on "
        "this slot: the usual shape of memory poisoning."
    ),
    ConflictKind.CONTRADICTION: (
        "The values contradict each other and this predicate's policy says a human decides."
    ),
    ConflictKind.REVERTED: (
        "A steward reverted an automatic supersession: the older value stands "
        "again beside every value live on the slot, and a steward decides between them."
    ),
    ConflictKind.CRAWLER: (
        "Found by the maintenance crawler among standing facts: values that "
        "should not both hold, none of them newer by an update."
    ),
}

EXCLUSION_GROUP_EXPLANATION = (
    "The predicates {predicates} exclude each other: one subject cannot hold "
    "both for the same object."
)


def kind_explanation(kind: str) -> str:
    """One plain line for a conflict kind (an unknown kind says so rather than failing)."""
    return KIND_EXPLANATIONS.get(kind, f"A conflict of kind “{kind}”.")


VERDICT_WORDS: dict[str, str] = {
    "corroborate": "corroborate — the values are one value written differently",
    "single_winner": "single winner — one value is right and the others mistaken",
    "coexist": "coexist — the values hold at the same time",
    "supersede": "supersede — a newer value replaced the older ones",
    "needs_review": "needs review — the adjudicator cannot tell",
}


def verdict_words(kind: str) -> str:
    return VERDICT_WORDS.get(kind, kind)
