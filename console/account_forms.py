from django import forms

from accounts.actions import MAX_NAME_LENGTH
from console.forms import StorableTextForm


class TokenForm(StorableTextForm):
    name = forms.CharField(
        label="Token name",
        max_length=MAX_NAME_LENGTH,
        help_text="What the token is for, e.g. the agent that will use it.",
    )
