"""What machine a benchmark ran on, printed with every result."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} CPUs{mem}, "
        f"Python {platform.python_version()}"
    )


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / mean in milliseconds."""
    ordered = sorted(samples_s)
    n = len(ordered)

    def pick(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] * 1000

    return {"p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "mean": statistics.fmean(ordered) * 1000, "n": n}


def proc_cpu(pid: int, *, children: bool = False) -> float:
    """User + system seconds of a process from ``/proc`` (+ its reaped children's with
    ``children``); 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    """The live children of ``pid`` (one level)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
    return out


def tree_cpu(pid: int) -> float:
    """CPU-seconds of ``pid``, its reaped children and its live children (one level: a postmaster's
    backends, uvicorn's worker processes)."""
    return proc_cpu(pid, children=True) + sum(proc_cpu(c) for c in child_pids(pid))
