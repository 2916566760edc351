from __future__ import annotations

from typing import cast

from django import forms

from agents.models import Execution


class SessionCreateForm(forms.Form):
    team: forms.ModelChoiceField = forms.ModelChoiceField(queryset=None, empty_label=None)
    mode = forms.ChoiceField(choices=())
    execution = forms.ChoiceField(choices=Execution.choices, initial=Execution.ASK, widget=forms.RadioSelect)
    title = forms.CharField(max_length=200, required=False)
    # The first message (checked by the turn service, whose reasons the page shows): it creates the session.
    message = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    # The project a "New session" of a project's page starts in (its id; checked by the service).
    project = forms.CharField(required=False, max_length=32, widget=forms.HiddenInput)

    def __init__(self, *args, teams, modes, default_mode: str, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ModelChoiceField, self.fields["team"]).queryset = teams
        cast(forms.ChoiceField, self.fields["mode"]).choices = [(m.key, m.display_name) for m in modes]
        self.fields["mode"].initial = default_mode
