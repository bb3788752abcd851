"""The one retry policy for every provider call.

The SDKs' own retries are switched off (``max_retries=0`` and equivalents) so that this
module is the only place that decides. Each attempt runs under
``asyncio.timeout(attempt_timeout)``; an SDK error is first translated into an
:class:`~omoide.errors.ProviderError` by the provider's mapping helper (see
:mod:`omoide.providers._errors`), and then:

* :class:`~omoide.errors.RateLimited` (429) and :class:`~omoide.errors.ProviderUnavailable`
  (5xx, timeouts, connection errors) are retried with exponential backoff and full
  jitter, up to ``max_retries`` times;
* a ``Retry-After`` hint on a 429 (or 503) is honoured: the wait is exactly the hint.
  A hint longer than ``max_retry_after`` is not waited out in-process: the error is raised
  at once with ``retry_after`` set, so the caller (a worker, a queue) can reschedule;
* everything else — :class:`~omoide.errors.ContextOverflow`,
  :class:`~omoide.errors.AuthenticationFailed`, :class:`~omoide.errors.BadRequest` and
  any other 4xx — is raised at once, never retried.

Waits are configurable (:class:`RetryPolicy`), so tests run with millisecond backoff.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from omoide.errors import ProviderError, ProviderUnavailable, RateLimited

if TYPE_CHECKING:
    from omoide.settings import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How provider calls are retried.

    Attributes:
        max_retries: retries after the first attempt (``Settings.provider_max_retries``).
        initial_wait: the backoff base in seconds; attempt *n* waits up to
            ``initial_wait * 2**n`` (full jitter), capped at ``max_wait``.
        max_wait: the longest backoff wait in seconds.
        max_retry_after: the longest ``Retry-After`` hint waited out in-process; a longer
            hint raises :class:`~omoide.errors.RateLimited` at once.
    """

    max_retries: int = 4
    initial_wait: float = 0.5
    max_wait: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.initial_wait < 0 or self.max_wait < 0 or self.max_retry_after < 0:
            raise ValueError("retry waits must be >= 0")

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        return cls(max_retries=settings.provider_max_retries)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), without a hint."""
        ceiling = min(self.max_wait, self.initial_wait * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)  # "equal jitter": never 0, never above the cap


def _hint(exc: BaseException | None) -> float | None:
    if isinstance(exc, RateLimited) and exc.retry_after is not None:
        return exc.retry_after
    if isinstance(exc, ProviderUnavailable):
        hint = exc.details.get("retry_after")
        return float(hint) if isinstance(hint, int | float) else None
    return None


def _retryable(policy: RetryPolicy) -> Callable[[BaseException], bool]:
    def check(exc: BaseException) -> bool:
        if not isinstance(exc, ProviderError) or not exc.retryable:
            return False
        hint = _hint(exc)
        return hint is None or hint <= policy.max_retry_after

    return check


async def call_with_retries(
    operation: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    attempt_timeout: float,
    provider: str,
    what: str,
) -> T:
    """Run ``operation`` under the retry policy, each attempt bounded by ``timeout`` seconds.

    ``operation`` must raise :class:`~omoide.errors.ProviderError` subclasses (wrap the SDK
    call in the provider's error-mapping helper); a timeout becomes
    :class:`~omoide.errors.ProviderUnavailable`.

    Args:
        operation: a zero-argument coroutine function making one attempt.
        policy: the retry policy.
        attempt_timeout: seconds allowed for one attempt.
        provider: the provider name, for errors and logs.
        what: a short name of the call (``"chat"``, ``"embed"``), for errors and logs.

    Raises:
        ProviderError: the last error, when it is not retryable or the retries are used up.
    """

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        hint = _hint(exc)
        return max(hint, 0.0) if hint is not None else policy.backoff(state.attempt_number)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        sleep = state.next_action.sleep if state.next_action is not None else 0.0
        logger.warning(
            "provider_retry provider=%s call=%s attempt=%d error=%s wait_s=%.3f",
            provider,
            what,
            state.attempt_number,
            getattr(exc, "code", type(exc).__name__),
            sleep,
        )

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=wait,
        retry=retry_if_exception(_retryable(policy)),
        before_sleep=before_sleep,
        reraise=True,
        sleep=asyncio.sleep,
    )
    async for attempt in retrying:
        with attempt:
            return await run_with_timeout(operation, attempt_timeout=attempt_timeout, provider=provider, what=what)
    raise AssertionError("unreachable: tenacity either returns or re-raises")  # pragma: no cover


async def run_with_timeout(
    operation: Callable[[], Awaitable[T]], *, attempt_timeout: float, provider: str, what: str
) -> T:
    """One attempt of ``operation`` bounded by ``attempt_timeout`` seconds; a timeout becomes ProviderUnavailable."""
    try:
        async with asyncio.timeout(attempt_timeout):
            return await operation()
    except TimeoutError as exc:
        raise ProviderUnavailable(
            f"{provider} {what} call timed out after {attempt_timeout:g} s (OMOIDE_PROVIDER_TIMEOUT_SECONDS)",
            provider=provider,
            timeout=attempt_timeout,
        ) from exc


__all__ = ["RetryPolicy", "call_with_retries", "run_with_timeout"]
