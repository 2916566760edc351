"""The structured log lines logged meanwhile, formatted as the configured console handler does (its
ids filter and JSON formatter), with Aptix's loggers at INFO."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from aptix.logcontext import IdsFilter
from aptix.logging import StructuredFormatter


@contextmanager
def json_lines() -> Iterator[Callable[[], list[dict]]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(IdsFilter())
    handler.setFormatter(StructuredFormatter())
    root, aptix = logging.getLogger(), logging.getLogger("aptix")
    root.addHandler(handler)
    level, aptix.level = aptix.level, logging.INFO
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        aptix.level = level
