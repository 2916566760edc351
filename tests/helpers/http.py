"""A plain HTTP GET of a JSON endpoint (a probe), from a test thread."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def get_json(url: str) -> tuple[int, dict] | None:
    """(status, body) of a GET, error statuses included; None while nothing listens there."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except OSError:
        return None
