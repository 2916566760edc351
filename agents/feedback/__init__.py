"""Feedback on answers: a user's 👍/👎 (and, with a 👎, a reason and a comment) on a turn's answer.

services.py writes it (feedback_set: the checks, the one write), selectors.py reads it (the turns a
user may rate, the curators' report, the auditors' export), admin.py is the report page in the admin.
The model is agents.models.AnswerFeedback.
"""
