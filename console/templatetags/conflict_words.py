"""Template access to ``console.conflict_words``: ``{{ conflict.kind|kind_explanation }}``."""

from django import template

from console import conflict_words

register = template.Library()


@register.filter
def kind_explanation(kind: str) -> str:
    return conflict_words.kind_explanation(kind)


@register.filter
def verdict_words(kind: str) -> str:
    return conflict_words.verdict_words(kind)
