"""Sessions shared with the author's team: share, stop sharing, continue as one's own copy
(services.py). Who may read a shared session is sessions.session_get's check (`read=True`)."""
