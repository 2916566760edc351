"""With PROMETHEUS_MULTIPROC_DIR, any process's scrape adds up the counters of every process of the
host, and counts only the websockets of live ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.slow  # real processes

ROOT = Path(__file__).resolve().parents[2]
COUNT = """
from aptix import metrics
for _ in range({turns}):
    metrics.turn_started(execution="ask", mode="general", model="offline")
metrics.websocket_opened()
metrics.refused("api")
"""
SCRAPE = "import sys; from aptix import metrics; sys.stdout.write(metrics.exposition().decode())"


def run(script: str, directory: Path) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory), "DJANGO_SETTINGS_MODULE": "aptix.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_a_scrape_adds_up_every_process(tmp_path):
    run(COUNT.format(turns=2), tmp_path)
    run(COUNT.format(turns=3), tmp_path)
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(run(SCRAPE, tmp_path))
        for sample in family.samples
    }
    labels = (("execution", "ask"), ("mode", "general"), ("model", "offline"), ("status", "running"))
    assert values[("aptix_turns_started_total", labels)] == 5
    assert values[("aptix_refusals_total", (("reason", "api"),))] == 2
    assert values[("aptix_websockets_open", ())] == 0  # both processes have exited: their sockets are gone
