"""The audit feed in words: what each entry did, to what, before and after (SPEC §12).

The feed stores each entry as the action wrote it: a verb such as
``resolved-conflict``, ids, and JSON before and after. That stays the
machine format (the CSV and JSON Lines exports). The feed page reads each
entry as a sentence instead: "Kept candidate <fact> in <conflict>", the
fields that changed under their own names, times humanized, and every fact
or conflict a link to its page, but only for what the viewer may read.

``describe`` makes plain values (:class:`Described`, :class:`Value`); the
template renders them. Nothing here writes HTML or reads the database: the
view looks the page's facts and conflicts up once and passes them in.
"""

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Every action the feed holds, with the words of the Action filter.
ACTION_LABELS = {
    "recorded-verdict": "Verdict (admit or reject)",
    "filed-challenge": "Challenge filed",
    "refuted-challenge": "Challenge refuted",
    "corrected-fact": "Fact corrected",
    "opened-conflict": "Conflict opened",
    "resolved-conflict": "Conflict resolved",
    "closed-conflict": "Conflict closed as moot",
    "reopened-conflict": "Conflict reopened by a verdict",
    "superseded": "Fact superseded",
    "invalidated": "Fact invalidated",
    "decayed": "Fact marked decayed",
    "withdrew-episode": "Episode withdrawn",
    "withdrawn": "Fact withdrawn with its episode",
    "reinstated": "Fact reinstated by a withdrawal",
    "merged-entity": "Entities merged",
    "resolved-name": "Look-alike name resolved",
    "unmerged-entity": "Entity merge undone",
    "reported-outcome": "Outcome reported",
    "granted-scope": "Scope granted",
    "made-steward": "Steward appointed",
    "revoked-steward": "Stewardship revoked",
}

ACTION_CHOICES = [
    ("", "Any action"),
    *sorted(ACTION_LABELS.items(), key=lambda choice: choice[1].lower()),
]

# The before/after keys shown as a change, by name; the others are in the sentence.
_CHANGE_LABELS = {
    "status": "Status",
    "replacement_status": "Replacement's status",
    "t_invalid": "Valid until",
    "invalidation_kind": "Ended as",
    "superseded_by": "Superseded by",
    "confidence": "Confidence",
    "source_type": "Source",
    "resolution": "Resolution",
    "resolves_to": "Resolves to",
    "decayed_at": "Marked decayed",
    "effective_confidence": "Confidence then",
}
_TIMES = {"t_invalid", "decayed_at"}
_FACTS = {"superseded_by"}
_RESOLUTIONS = {"kept": "kept one side", "coexist": "both stand", "dismissed": "dismissed"}


@dataclass(frozen=True)
class Value:
    """A word, a time, or a link (``url`` empty when the viewer may not open it)."""

    text: str = ""
    time: datetime | None = None
    url: str = ""
    # Text someone wrote (a name): the page isolates its direction.
    isolate: bool = False


@dataclass(frozen=True)
class Described:
    """One entry in words: a sentence of values, and the fields it changed."""

    sentence: tuple[Value, ...]
    # (the field's name, its value before, after), for the fields that changed.
    changes: tuple[tuple[str, tuple["Value", ...], tuple["Value", ...]], ...] = field(default=())


@dataclass(frozen=True)
class Readable:
    """The page's facts and conflicts the viewer may read: id → (label, url)."""

    facts: Mapping[str, tuple[str, str]]
    conflicts: Mapping[str, tuple[str, str]]


def mentioned(before: dict | None, after: dict | None, target_type: str, target_id: str):
    """The fact and conflict ids one entry names, for the view to look up in bulk."""
    facts: set[str] = set()
    conflicts: set[str] = set()
    for state in (before or {}, after or {}):
        for key in ("fact", "incoming", "superseded_by"):
            if isinstance(state.get(key), str):
                facts.add(state[key])
        for key in ("kept", "invalidated", "candidates", "facts", "withdrawn", "reinstated"):
            facts.update(item for item in state.get(key) or [] if isinstance(item, str))
    if target_type == "fact":
        facts.add(target_id)
    elif target_type == "conflict":
        conflicts.add(target_id)
    return facts, conflicts


def describe(
    action: str,
    target_type: str,
    target_id: str,
    before: dict | None,
    after: dict | None,
    readable: Readable,
    scope: str = "",
) -> Described:
    """The sentence and the changes of one entry (``scope``: the name of the entry's scope)."""
    before, after = before or {}, after or {}

    def fact(fact_id: Any) -> Value:
        label, url = readable.facts.get(str(fact_id), ("a fact you cannot open", ""))
        return Value(label, url=url)

    def facts(ids: Iterable[Any]) -> list[Value]:
        shown = [fact(fact_id) for fact_id in ids]
        joined: list[Value] = []
        for index, value in enumerate(shown):
            if index:
                joined.append(Value(" and " if index == len(shown) - 1 else ", "))
            joined.append(value)
        return joined or [Value("nothing")]

    def conflict(conflict_id: str) -> Value:
        label, url = readable.conflicts.get(conflict_id, ("a conflict", ""))
        return Value(label, url=url)

    target = (
        fact(target_id)
        if target_type == "fact"
        else conflict(target_id)
        if target_type == "conflict"
        else Value(f"{target_type} {target_id}")
    )
    on = after.get("fact") or before.get("fact")
    words: list[Value]
    if action == "recorded-verdict":
        verb = {"admitted": "Admitted", "rejected": "Rejected"}.get(after.get("verdict"), "Ruled")
        words = [Value(f"{verb} "), fact(on)]
    elif action == "filed-challenge":
        words = [Value("Challenged "), fact(on)]
    elif action == "refuted-challenge":
        words = [Value("Refuted a challenge to "), fact(on)]
    elif action == "corrected-fact":
        replacement = fact(after.get("superseded_by"))
        words = [Value("Corrected "), target, Value(": replaced by "), replacement]
    elif action == "resolved-conflict":
        resolution = after.get("resolution")
        if resolution == "kept":
            kept = after.get("kept") or []
            noun = "candidate" if len(kept) == 1 else "candidates"
            words = [Value(f"Kept {noun} "), *facts(kept), Value(" in "), target]
            if after.get("invalidated"):
                words += [Value("; ended "), *facts(after["invalidated"])]
        elif resolution == "coexist":
            words = [Value("Ruled that both stand in "), target]
        else:
            words = [Value("Dismissed "), target, Value(" as a false alarm")]
    elif action == "opened-conflict":
        kind = after.get("kind")
        words = [Value("Opened "), target, Value(f" ({kind})" if kind else "")]
        if after.get("incoming"):
            words += [Value(": "), fact(after["incoming"]), Value(" against ")]
            words += facts(after.get("candidates") or [])
    elif action == "closed-conflict" and after.get("rejected"):
        # Closed by a steward's rejection of a side (admissions.actions.record_verdict).
        words = [
            Value("Closed "),
            target,
            Value(" as moot: "),
            fact(after["rejected"]),
            Value(" was rejected, so it no longer has two sides"),
        ]
    elif action == "closed-conflict":
        words = [Value("Closed "), target, Value(" by itself: a side is no longer live")]
    elif action == "reopened-conflict":
        words = [
            Value("Reopened "),
            target,
            Value(": "),
            fact(after.get("admitted")),
            Value(" was admitted after its rejection had closed it"),
        ]
    elif action == "superseded":
        # The write path's entry targets the newer fact and names the older one.
        older = fact(on) if on else target
        words = [Value("Superseded "), older, Value(" by "), fact(after.get("superseded_by"))]
    elif action == "reverted":
        words = [Value(f"Reverted automatic change #{target_id}")]
    elif action == "invalidated":
        words = [Value("Invalidated "), target]
    elif action == "decayed":
        words = [Value("Marked "), target, Value(" decayed")]
    elif action == "withdrew-episode":
        withdrawn, reinstated = after.get("withdrawn") or [], after.get("reinstated") or []
        words = [
            Value(f"Withdrew episode “{after.get('episode', '')}”: "),
            Value(f"{len(withdrawn)} {'fact' if len(withdrawn) == 1 else 'facts'} withdrawn, "),
            Value(f"{len(reinstated)} reinstated"),
        ]
    elif action == "withdrawn":
        words = [Value("Withdrew "), target, Value(" with its episode")]
    elif action == "reinstated":
        words = [Value("Reinstated "), target, Value(": what superseded it was withdrawn")]
    elif action in ("merged-entity", "unmerged-entity"):
        entity = after.get("entity") or before.get("entity") or ""
        # Each name its own part, isolated on the page.
        if action == "merged-entity":
            into = after.get("resolves_to", "")
            words = [
                Value("Merged “"),
                Value(entity, isolate=True),
                Value("” into “"),
                Value(into, isolate=True),
                Value("”"),
            ]
        else:
            words = [Value("Undid the merge of “"), Value(entity, isolate=True), Value("”")]
    elif action == "resolved-name":
        words = [
            Value(f"Took the {after.get('role', 'name')} “"),
            Value(after.get("given", ""), isolate=True),
            Value(
                f"”{_spelled_with(after.get('given', ''), after.get('entity', ''))} as the entity “"
            ),
            Value(after.get("entity", ""), isolate=True),
            Value("”, whose name it looks like, in "),
            fact(after.get("fact")),
        ]
    elif action == "reported-outcome":
        words = [Value("Reported accepted work that used "), *facts(after.get("facts") or [])]
    elif action in ("made-steward", "revoked-steward"):
        state = after if action == "made-steward" else before
        steward = state.get("steward") or "an account"
        where = "every scope" if state.get("every_scope") else scope or "a scope"
        if action == "made-steward":
            words = [Value(f"Made {steward} a steward of {where}")]
        else:
            words = [Value(f"Revoked {steward}'s stewardship of {where}")]
    elif action == "granted-scope":
        member = after.get("member") or "an account"
        words = [Value(f"Made {member} a member of {scope or 'a scope'}")]
        if after.get("scope_created"):
            words.append(Value(", a scope created for it"))
    else:
        words = [Value(f"{ACTION_LABELS.get(action, action)}: "), target]
    return Described(tuple(words), tuple(_changes(before, after, fact)))


Change = tuple[str, tuple[Value, ...], tuple[Value, ...]]


def _spelled_with(given: str, name: str) -> str:
    """The letters of a look-alike spelling that the entity's name lacks, named: they
    render alike, so the sentence says what differs."""
    other = sorted({c for c in given if c not in name}, key=given.index)
    if not other:
        return ""
    named = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in other[:3])
    return f" (spelled with {named}{', …' if len(other) > 3 else ''})"


def _changes(before: dict, after: dict, fact) -> list[Change]:
    changed = []
    for key, label in _CHANGE_LABELS.items():
        if key not in before and key not in after:
            continue
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        changed.append((label, _value(key, old, fact), _value(key, new, fact)))
    return changed


def _value(key: str, value: Any, fact) -> tuple[Value, ...]:
    if value is None or value == "":
        return (Value("still valid" if key == "t_invalid" else "none"),)
    if key in _TIMES and isinstance(value, str):
        try:
            return (Value(time=datetime.fromisoformat(value)),)
        except ValueError:
            return (Value(value),)
    if key in _FACTS:
        return (fact(value),)
    if key == "resolution":
        return (Value(_RESOLUTIONS.get(value, str(value))),)
    if isinstance(value, float):
        return (Value(f"{value:.2f}"),)
    return (Value(str(value)),)
