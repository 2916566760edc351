"""Every environment variable Aptix reads, declared once: its name, kind (aptix/envtypes.py: how it
is parsed and checked), default, whether it is a secret, what it does and its section.

aptix/settings.py reads the app's variables through these declarations; code without Django (the SQL
MCP server's process, the demo-data builder) reads its own the same way, `APTIX_DEMO_DB.read()`.
docs/configuration.md and .env.example are generated from them (`manage.py aptix_config_docs`), and
tests/aptix/test_env_declarations.py fails when code reads a variable that is not declared here, or
one declared here is not read or not documented. A new variable: one declaration in the module of its
section (core.py, runs.py, files.py, access.py), one read, and the two files generated again. No Django here
(see aptix/envtypes.py).
"""

from __future__ import annotations

# The declarations live in one module per group of sections (each file stays short); this package is
# the one name the code reads them by (`env.X`, `from aptix.env import X`), so it re-exports them all.
from aptix.envtypes import Setting

from . import access, core, files, runs
from .access import *  # noqa: F403 - re-exported: the code reads every declaration as aptix.env.X
from .core import *  # noqa: F403 - as above
from .files import *  # noqa: F403 - as above
from .runs import *  # noqa: F403 - as above
from .sections import *  # noqa: F403 - as above

# Every declaration, in the order of the sections (the order of the generated files).
DECLARED: dict[str, Setting] = {
    value.name: value
    for module in (core, runs, files, access)
    for value in vars(module).values()
    if isinstance(value, Setting)
}
