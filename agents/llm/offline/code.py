"""The offline model's answer to a request for code: it writes none to order, so it says so and shows
one fixed, working example — enough to see how code looks in an answer (highlighted, labelled with
its language, with Copy) without a real model."""

from __future__ import annotations

import re

# "write a Python function that…", "show me a script to…", "give me code for…"
_CODE_REQUEST = re.compile(
    r"\b(write|show|give|create|implement)\b.{0,60}\b(function|code|script|snippet|class|program)\b", re.I | re.S
)

EXAMPLE = '''def is_palindrome(text: str) -> bool:
    """Whether `text` reads the same backwards, ignoring case, spaces and punctuation."""
    letters = [c.lower() for c in text if c.isalnum()]
    return letters == letters[::-1]


print(is_palindrome("A man, a plan, a canal: Panama"))  # True'''

CODE_ANSWER = (
    "I'm Aptix's built-in offline model, so I can't write code to your request. Here is one fixed example "
    "instead, to show how code looks here:\n\n"
    f"```python\n{EXAMPLE}\n```\n\n"
    "Connect a real model (an OpenAI-compatible server: see *Models* in the docs) for code written to order."
)


def code_answer(text: str) -> str | None:
    """The answer to `text` if it asks for code, else None."""
    return CODE_ANSWER if _CODE_REQUEST.search(text or "") else None
