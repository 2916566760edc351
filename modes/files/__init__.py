"""Modes as files: the catalog as one Markdown file per mode, for export, import and review in git.

format.py        the `<key>.mode.md` format: the front-matter key ↔ AgentMode field table, reading and
                 writing (deterministic, so export → import changes nothing)
frontmatter.py   a Markdown file's YAML front matter and body, with the line of every key (PyYAML, safe)
foreign.py       VS Code custom agents (`*.agent.md`) and Claude Code subagents (`.claude/agents/*.md`)
sources.py       where files come from and go to: a directory, a zip (bounded), loose uploads
plan.py          validation of a whole set of files and the import plan (new / changed / unchanged with
                 a diff); apply_plan, the one writer
admin_views.py   the admin's Export (zip) and Import (upload → preview → confirm) pages
"""
