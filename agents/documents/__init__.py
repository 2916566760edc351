"""A session's documents: drafts (DDRs, workflows) the agent writes with `document_write` and the user
edits beside the timeline, every version kept and attributed (services.py writes, reads; outline.py:
what a turn's context carries; render.py: diff, Markdown and DOCX downloads)."""
