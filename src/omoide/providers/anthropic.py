"""Anthropic chat model (Messages API) through the official ``anthropic`` SDK.

omoide's content blocks already have the Messages API shape (``text``, ``tool_use``,
``tool_result``), so requests are the blocks' ``to_dict()`` forms; consecutive turns of the
same role are merged into one message. Tools become ``{"name", "description",
"input_schema"}``. Stop reasons: ``end_turn``, ``max_tokens``, ``tool_use``,
``stop_sequence`` and ``refusal`` map to themselves, ``model_context_window_exceeded`` to
``max_tokens`` (the answer was cut by the window), anything else (``pause_turn``) to
``other``.

Sampling parameters are not sent: API version 2026-10-21 (the default of the SDK 2.x this
module uses, which has no such arguments any more) rejects ``temperature``, ``top_p`` and
``top_k`` with HTTP 400, even at their default values. The ``temperature`` / ``top_p``
arguments are accepted for the common :class:`~omoide.providers.base.ChatModel` interface
and ignored here (logged at DEBUG).

The SDK's own retries are disabled (``max_retries=0``); :mod:`omoide.providers._retry`
retries, and :func:`omoide.providers._errors.anthropic_errors` maps the errors.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from omoide.errors import ConfigError, ProviderError
from omoide.models import ContentBlock, Message, TextBlock, ToolUseBlock
from omoide.providers._errors import anthropic_errors
from omoide.providers._retry import RetryPolicy, call_with_retries
from omoide.providers._streaming import retrying_stream
from omoide.providers.base import ChatResponse, StopReason, StreamDone, StreamEvent, TextDelta, ToolSpec, Usage
from omoide.providers.context import ModelLimits

if TYPE_CHECKING:
    import anthropic
    from anthropic.lib.streaming import AsyncMessageStream
    from anthropic.types import Message as AnthropicMessage

logger = logging.getLogger(__name__)

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "tool_use": "tool_use",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
}


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """omoide messages → Messages API ``messages`` (same-role neighbours merged)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = [block.to_dict() for block in message.content]
        if out and out[-1]["role"] == message.role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": message.role, "content": blocks})
    return out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)} for t in tools]


def from_anthropic_message(message: AnthropicMessage) -> ChatResponse:
    """A Messages API response → :class:`ChatResponse` (thinking blocks are dropped)."""
    content: list[ContentBlock] = []
    for block in message.content:
        if block.type == "text":
            content.append(TextBlock(block.text))
        elif block.type == "tool_use":
            content.append(
                ToolUseBlock(block.id, block.name, dict(block.input) if isinstance(block.input, dict) else {})
            )
    usage = message.usage
    input_tokens = usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return ChatResponse(
        content=tuple(content),
        stop_reason=_STOP_REASONS.get(str(message.stop_reason), "other"),
        usage=Usage(input_tokens=input_tokens, output_tokens=usage.output_tokens),
        model=message.model,
    )


class AnthropicChatModel:
    """Claude through the Messages API.

    Args:
        model: the model id, e.g. ``claude-sonnet-4-5``.
        api_key: the API key (the registry reads ``ANTHROPIC_API_KEY``).
        base_url: another endpoint (a proxy, or a test server); ``None`` = the SDK default.
        timeout: seconds allowed for one attempt (``OMOIDE_PROVIDER_TIMEOUT_SECONDS``).
        retry: the retry policy.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError("the anthropic provider needs its SDK: pip install 'omoide[anthropic]'") from exc
        self.model_id = model
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client: anthropic.AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> AnthropicChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _params(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolSpec],
        max_tokens: int,
        temperature: float | None,
        top_p: float | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model_id,
            "messages": to_anthropic_messages(messages),
            "max_tokens": max_tokens,
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = to_anthropic_tools(tools)
        if temperature is not None or top_p is not None:
            logger.debug("anthropic: the Messages API takes no sampling parameters; temperature/top_p ignored")
        return params

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> ChatResponse:
        """Generate one answer (see :class:`~omoide.providers.base.ChatModel`)."""
        params = self._params(messages, system, tools, max_tokens, temperature, top_p)

        async def attempt() -> ChatResponse:
            with anthropic_errors(self.provider):
                message = await self._client.messages.create(**params)
            return from_anthropic_message(message)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="chat"
        )

    async def count_tokens(
        self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
    ) -> int:
        """Input tokens of a request, counted by the API (``/v1/messages/count_tokens``; needs network)."""
        params: dict[str, Any] = {"model": self.model_id, "messages": to_anthropic_messages(messages)}
        if system:
            params["system"] = system
        if tools:
            params["tools"] = to_anthropic_tools(tools)

        async def attempt() -> int:
            with anthropic_errors(self.provider):
                counted = await self._client.messages.count_tokens(**params)
            return int(counted.input_tokens)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="count_tokens"
        )

    async def fetch_limits(self) -> ModelLimits:
        """The model's limits from the Models API (``max_input_tokens``, ``max_tokens``; needs network).

        Raises:
            ProviderError: the API does not report them for this model.
        """

        async def attempt() -> ModelLimits:
            with anthropic_errors(self.provider):
                info = await self._client.models.retrieve(self.model_id)
            if not info.max_input_tokens:
                raise ProviderError(
                    f"anthropic: no context window reported for {self.model_id}", provider=self.provider
                )
            return ModelLimits(info.max_input_tokens, info.max_tokens or 0, True)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="models"
        )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Stream one answer over SSE: ``TextDelta`` events, then ``StreamDone``."""
        params = self._params(messages, system, tools, max_tokens, temperature, top_p)
        opened: list[AsyncMessageStream[Any]] = []

        async def open_stream() -> AsyncIterator[Any]:
            stream = await self._client.messages.stream(**params).__aenter__()
            opened.append(stream)
            return stream.__aiter__()

        async def close(_: AsyncIterator[Any]) -> None:
            await opened[-1].close()

        events = retrying_stream(
            open_stream,
            close,
            errors=lambda: anthropic_errors(self.provider),
            policy=self._retry,
            attempt_timeout=self._timeout,
            provider=self.provider,
        )
        async with contextlib.aclosing(events):
            async for event in events:
                if event.type == "text" and event.text:
                    yield TextDelta(event.text)
            with anthropic_errors(self.provider):
                final = await opened[-1].get_final_message()
        yield StreamDone(from_anthropic_message(final))


__all__ = ["AnthropicChatModel", "from_anthropic_message", "to_anthropic_messages", "to_anthropic_tools"]
