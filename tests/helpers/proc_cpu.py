"""CPU time used by groups of processes over a stretch of time, from /proc (Linux): for the benches,
where the time of a multi-process deployment goes. PostgreSQL's share is its postmaster's and its
backends' (found from `data_directory`/postmaster.pid), including the backends that exited meanwhile
(the postmaster's reaped children); Redis's is its server process (`INFO server`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()  # the fields after the command's name


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """utime + stime of `pid` (and with `reaped`, of its children that exited); 0 once it is gone."""
    try:
        fields = _stat(pid)
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    if reaped:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / TICKS


def children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[1]) == parent:  # ppid
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue
    return found


def postmaster_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        (data,) = cursor.fetchone()
    return int((Path(data) / "postmaster.pid").read_text().split()[0])


def redis_pid(url: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return int(client.info("server")["process_id"])
    finally:
        client.close()


@dataclass
class CpuUsed:
    wall: float
    by_kind: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.by_kind.values())


class ProcessCpu:
    """`start()`, then `stop()` → the CPU seconds each kind of process used in between."""

    def __init__(self, kinds: dict[str, list[int]], *, postgres: bool = False, redis_url: str = "") -> None:
        self.kinds = dict(kinds)
        self.postmaster = postmaster_pid() if postgres else None
        if redis_url:
            self.kinds["redis"] = [redis_pid(redis_url)]
        self._before: dict[str, float] = {}
        self._pg_before: dict[int, float] = {}
        self._started = 0.0

    def _postgres(self) -> dict[int, float]:
        if self.postmaster is None:
            return {}
        seen = {self.postmaster: cpu_seconds(self.postmaster, reaped=True)}
        seen.update({pid: cpu_seconds(pid) for pid in children(self.postmaster)})
        return seen

    def _kinds(self) -> dict[str, float]:
        return {kind: sum(cpu_seconds(pid) for pid in pids) for kind, pids in self.kinds.items()}

    def start(self) -> None:
        self._before, self._pg_before, self._started = self._kinds(), self._postgres(), time.perf_counter()

    def stop(self) -> CpuUsed:
        wall = time.perf_counter() - self._started
        after = self._kinds()
        used = {kind: after[kind] - self._before[kind] for kind in after}
        if self.postmaster is not None:
            # A backend that started meanwhile counts whole; one that exited meanwhile is in the
            # postmaster's reaped time (cutime) with its whole life: less what it had used before.
            pg_after = self._postgres()
            exited = sum(seconds for pid, seconds in self._pg_before.items() if pid not in pg_after)
            used["postgres"] = sum(s - self._pg_before.get(pid, 0.0) for pid, s in pg_after.items()) - exited
        return CpuUsed(wall, used)
