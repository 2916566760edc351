"""A saved prompt's `{{variables}}`: found in its text (each name letters, digits and underscores,
spaces inside the braces allowed: `{{ name }}`), checked when it is saved, filled when it is used.
Filling is one pass: a value that itself contains `{{x}}` is inserted as it is, never filled again."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
NAME = re.compile(r"\s*([A-Za-z0-9_]+)\s*")
MAX_VARIABLES = 20
VALUE_MAX = 10_000
CODE_INVALID = "invalid"

ERROR_BAD_VARIABLE = (
    'The variable "{placeholder}" has a bad name: a variable\'s name is letters, digits and underscores, '
    "as in {{{{topic}}}}."
)
ERROR_TOO_MANY_VARIABLES = f"The text has more than {MAX_VARIABLES} variables."
ERROR_VARIABLES_NOT_OBJECT = "variables must be an object of names and their values."
ERROR_VARIABLE_MISSING = 'Give a value for "{name}".'
ERROR_VARIABLE_NOT_TEXT = 'The value of "{name}" must be text.'
ERROR_VARIABLE_TOO_LONG = f'The value of "{{name}}" is longer than {VALUE_MAX} characters.'


def variables_in(text: str) -> list[str]:
    """The names of the text's variables, each once, in the order they first appear (bad ones left out)."""
    names: list[str] = []
    for match in PLACEHOLDER.finditer(text):
        name = NAME.fullmatch(match.group(1))
        if name and name.group(1) not in names:
            names.append(name.group(1))
    return names


def variables_check(text: str) -> list[str]:
    """The text's variables, or a ValidationError on `text` naming the first bad one."""
    for match in PLACEHOLDER.finditer(text):
        if not NAME.fullmatch(match.group(1)):
            message = ERROR_BAD_VARIABLE.format(placeholder=match.group(0))
            raise ValidationError({"text": ValidationError(message, code=CODE_INVALID)})
    names = variables_in(text)
    if len(names) > MAX_VARIABLES:
        raise ValidationError({"text": ValidationError(ERROR_TOO_MANY_VARIABLES, code=CODE_INVALID)})
    return names


def variables_fill(text: str, values: object) -> str:
    """The text with each variable replaced by its value: every variable needs one (an empty one
    is refused, naming it: field `variables.<name>`); values of names the text lacks are ignored."""
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise ValidationError({"variables": ValidationError(ERROR_VARIABLES_NOT_OBJECT, code=CODE_INVALID)})
    for name in variables_in(text):
        value = values.get(name, "")
        if not isinstance(value, str):
            error = ERROR_VARIABLE_NOT_TEXT.format(name=name)
        elif not value.strip():
            error = ERROR_VARIABLE_MISSING.format(name=name)
        elif len(value) > VALUE_MAX:
            error = ERROR_VARIABLE_TOO_LONG.format(name=name)
        else:
            continue
        raise ValidationError({f"variables.{name}": ValidationError(error, code=CODE_INVALID)})

    def fill(match: re.Match[str]) -> str:
        name = NAME.fullmatch(match.group(1))
        return values[name.group(1)] if name else match.group(0)

    return PLACEHOLDER.sub(fill, text)
