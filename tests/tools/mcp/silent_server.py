"""A stdio "server" that reads every request and never answers one, initialize included: what a
server stuck in its start-up (a lock, a slow download, a prompt on stderr) looks like to the host."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    for _line in sys.stdin:  # read, so the host's writes never block; answer nothing
        pass
