"""A saved prompt's `{{variables}}`: found once each in order, bad names refused naming them, filled
in one pass with every variable required."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.prompts.variables import MAX_VARIABLES, VALUE_MAX, variables_check, variables_fill, variables_in


def test_variables_are_found_once_in_order():
    assert variables_in("{{b}} and {{ a }} and {{b}} and {{a_1}}") == ["b", "a", "a_1"]
    assert variables_in("no blanks, a { brace } and {{ unclosed") == []


@pytest.mark.parametrize(
    ("placeholder", "named"),
    [
        ("{{first name}}", "{{first name}}"),
        ("{{na-me}}", "{{na-me}}"),
        ("{{}}", "{{}}"),
        ("{{ é }}", "{{ é }}"),
        ("{{{x}}}", "{{{x}}"),  # the first "{{" opens it, the first "}}" closes it
    ],
)
def test_a_bad_name_is_refused_naming_it(placeholder, named):
    with pytest.raises(ValidationError) as refused:
        variables_check(f"Hello {placeholder}!")
    message = f'The variable "{named}" has a bad name: a variable\'s name is letters, digits and underscores, as in '
    assert refused.value.message_dict == {"text": [message + "{{topic}}."]}


def test_too_many_variables():
    with pytest.raises(ValidationError, match=f"more than {MAX_VARIABLES} variables"):
        variables_check(" ".join(f"{{{{v{i}}}}}" for i in range(MAX_VARIABLES + 1)))
    assert len(variables_check(" ".join(f"{{{{v{i}}}}}" for i in range(MAX_VARIABLES)))) == MAX_VARIABLES


def test_filling_is_one_pass_and_every_variable_is_required():
    assert variables_fill("{{a}}-{{ b }}-{{a}}", {"a": "{{b}}", "b": "2", "unused": "x"}) == "{{b}}-2-{{b}}"
    assert variables_fill("no blanks", None) == "no blanks"
    for values, field, message in [
        ({"a": "1"}, "variables.b", 'Give a value for "b".'),
        ({"a": "1", "b": 2}, "variables.b", 'The value of "b" must be text.'),
        (
            {"a": "1", "b": "x" * (VALUE_MAX + 1)},
            "variables.b",
            f'The value of "b" is longer than {VALUE_MAX} characters.',
        ),
        ("a=1", "variables", "variables must be an object of names and their values."),
    ]:
        with pytest.raises(ValidationError) as refused:
            variables_fill("{{a}} {{b}}", values)
        assert refused.value.message_dict == {field: [message]}
