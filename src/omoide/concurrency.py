"""Optimistic concurrency: re-read, re-apply, retry.

Every read-then-write change of a session row is guarded by its ``version`` column. When
the guard fails (:class:`~omoide.errors.VersionConflict`) the whole operation runs again
from the read, so the retry sees the row as it is now. (Seed 000 retried with the stale
row and version it had read first, so its retries could never succeed.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from omoide.errors import VersionConflict

T = TypeVar("T")
log = structlog.get_logger(__name__)


async def with_optimistic_retry(
    operation: Callable[[], Awaitable[T]],
    *,
    attempts: int = 5,
    max_wait: float = 0.5,
    what: str = "session update",
) -> T:
    """Run ``operation`` (which must read what it needs itself) until it commits.

    Args:
        operation: an async callable that reads the current row, decides, and writes with
            the version it read. It is called again from scratch after a conflict.
        attempts: total attempts before the last :class:`VersionConflict` propagates.
        max_wait: the longest pause between attempts (jittered exponential backoff).
        what: a label for the retry log line.

    Raises:
        VersionConflict: still conflicting after ``attempts`` tries.
    """
    attempt_no = 0
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(VersionConflict),
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=0.01, max=max_wait),
        reraise=True,
    ):
        with attempt:
            attempt_no += 1
            if attempt_no > 1:
                log.debug("optimistic_retry", what=what, attempt=attempt_no)
            return await operation()
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["with_optimistic_retry"]
