"""The web layer: pages and HTMX actions (views/), the JSON API (api.py), the websocket stream
(consumers.py), and what they render with (timeline.py, fragments.py, toolpanel.py, markdown.py)."""
