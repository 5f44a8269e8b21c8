from django import forms

from accounts.actions import MAX_NAME_LENGTH


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Token name",
        max_length=MAX_NAME_LENGTH,
        help_text="What the token is for, e.g. the agent that will use it.",
    )
