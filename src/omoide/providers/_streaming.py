"""Retries and timeouts for streamed calls.

A stream is retried (under :func:`~omoide.providers._retry.call_with_retries`) until its
first event arrives: connection errors, 429 and 5xx all happen before that. Once an event
has been handed to the caller, a failure is raised as it is — text already shown cannot
be taken back. Every wait for the next event is bounded by the provider timeout, so a
stalled stream fails with :class:`~omoide.errors.ProviderUnavailable` instead of hanging.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TypeVar, cast

from omoide.providers._retry import RetryPolicy, call_with_retries, run_with_timeout

E = TypeVar("E")

_END = object()


async def _next(iterator: AsyncIterator[E], errors: Callable[[], AbstractContextManager[None]]) -> E | object:
    with errors():
        return await anext(iterator, _END)


async def retrying_stream(
    open_stream: Callable[[], Awaitable[AsyncIterator[E]]],
    close: Callable[[AsyncIterator[E]], Awaitable[None]],
    *,
    errors: Callable[[], AbstractContextManager[None]],
    policy: RetryPolicy,
    attempt_timeout: float,
    provider: str,
) -> AsyncGenerator[E, None]:
    """Yield the events of a provider stream, retrying only until the first one arrives.

    Args:
        open_stream: makes the request and returns the SDK's event iterator.
        close: releases the SDK stream (called exactly once for every opened stream).
        errors: the provider's error-mapping context manager factory.
        policy / attempt_timeout / provider: as for :func:`~omoide.providers._retry.call_with_retries`.

    Use it under ``contextlib.aclosing`` so an early ``break`` closes the SDK stream.
    """

    async def first() -> tuple[AsyncIterator[E], E | object]:
        with errors():
            iterator = await open_stream()
        try:
            event = await _next(iterator, errors)
        except BaseException:
            await close(iterator)
            raise
        return iterator, event

    iterator, event = await call_with_retries(
        first, policy=policy, attempt_timeout=attempt_timeout, provider=provider, what="stream"
    )
    try:
        while event is not _END:
            yield cast(E, event)  # not _END, so an event
            event = await run_with_timeout(
                lambda: _next(iterator, errors), attempt_timeout=attempt_timeout, provider=provider, what="stream"
            )
    finally:
        await close(iterator)


__all__ = ["retrying_stream"]
