"""The prompt library: saved prompts with a title and `{{variables}}`, a user's own or shared with a
team (whose owners and the administrators curate them). variables.py reads and fills the variables,
services.py is the only writer (and the permission checks), selectors.py the reads."""
