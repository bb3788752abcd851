"""The retry policy: what is retried, how long it waits, and what is raised at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omoide.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextOverflow,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)
from omoide.providers import RetryPolicy
from omoide.providers._retry import call_with_retries
from omoide.settings import Settings

FAST = RetryPolicy(max_retries=3, initial_wait=0.001, max_wait=0.002, max_retry_after=1.0)


def scripted(*outcomes: BaseException | str) -> tuple[Callable[[], object], list[float]]:
    """An operation that raises or returns the outcomes in turn, recording when it was called."""
    calls: list[float] = []
    queue = list(outcomes)

    async def operation() -> str:
        calls.append(time.monotonic())
        outcome = queue.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return operation, calls


async def run(operation: Callable[[], object], policy: RetryPolicy = FAST, timeout: float = 5.0) -> object:
    return await call_with_retries(operation, policy=policy, attempt_timeout=timeout, provider="test", what="call")  # type: ignore[arg-type]


async def test_unavailable_is_retried_until_success() -> None:
    operation, calls = scripted(ProviderUnavailable("503"), ProviderUnavailable("502"), "ok")
    assert await run(operation) == "ok"
    assert len(calls) == 3


async def test_retries_stop_after_max_retries() -> None:
    operation, calls = scripted(*[ProviderUnavailable("down")] * 10)
    with pytest.raises(ProviderUnavailable):
        await run(operation)
    assert len(calls) == FAST.max_retries + 1


@pytest.mark.parametrize(
    "error",
    [ContextOverflow("too long"), AuthenticationFailed("bad key"), BadRequest("bad"), ProviderError("odd")],
    ids=["overflow", "auth", "bad-request", "other"],
)
async def test_non_retryable_errors_are_raised_at_once(error: ProviderError) -> None:
    operation, calls = scripted(error, "never")
    with pytest.raises(type(error)):
        await run(operation)
    assert len(calls) == 1


async def test_retry_after_is_waited_exactly() -> None:
    operation, calls = scripted(RateLimited("429", retry_after=0.15), "ok")
    assert await run(operation) == "ok"
    assert calls[1] - calls[0] >= 0.14


async def test_retry_after_on_a_503_is_honoured_too() -> None:
    operation, calls = scripted(ProviderUnavailable("503", retry_after=0.1), "ok")
    assert await run(operation) == "ok"
    assert calls[1] - calls[0] >= 0.09


async def test_a_retry_after_beyond_the_limit_is_raised_with_the_hint() -> None:
    operation, calls = scripted(RateLimited("429", retry_after=30.0), "never")
    with pytest.raises(RateLimited) as caught:
        await run(operation)
    assert caught.value.retry_after == 30.0
    assert len(calls) == 1


async def test_an_attempt_that_times_out_is_unavailable_and_retried() -> None:
    attempts = 0

    async def operation() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(10)
        return "ok"

    assert await run(operation, timeout=0.05) == "ok"
    assert attempts == 2


async def test_timeouts_until_retries_are_used_up() -> None:
    async def operation() -> str:
        await asyncio.sleep(10)
        return "never"

    policy = RetryPolicy(max_retries=1, initial_wait=0.001, max_wait=0.001)
    with pytest.raises(ProviderUnavailable, match=r"timed out after 0\.05 s"):
        await run(operation, policy=policy, timeout=0.05)


async def test_cancellation_propagates_and_is_not_retried() -> None:
    attempts = 0

    async def operation() -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(10)
        return "never"

    task = asyncio.create_task(run(operation))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert attempts == 1


async def test_sdk_exceptions_that_were_not_mapped_are_not_retried() -> None:
    operation, calls = scripted(KeyError("bug"), "never")
    with pytest.raises(KeyError):
        await run(operation)
    assert len(calls) == 1


@given(
    attempt=st.integers(min_value=1, max_value=40),
    initial=st.floats(min_value=0.0, max_value=5.0),
    cap=st.floats(min_value=0.0, max_value=60.0),
)
def test_backoff_is_jittered_below_the_cap(attempt: int, initial: float, cap: float) -> None:
    policy = RetryPolicy(initial_wait=initial, max_wait=cap)
    ceiling = min(cap, initial * 2 ** (attempt - 1))
    wait = policy.backoff(attempt)
    assert ceiling / 2 <= wait <= ceiling


def test_policy_comes_from_settings() -> None:
    assert RetryPolicy.from_settings(Settings(provider_max_retries=7)).max_retries == 7


@pytest.mark.parametrize("field", ["max_retries", "initial_wait", "max_wait", "max_retry_after"])
def test_negative_policy_values_are_rejected(field: str) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        RetryPolicy(**{field: -1})
