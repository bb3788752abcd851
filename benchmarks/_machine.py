"""What machine a benchmark ran on, printed with every result."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Sequence


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
