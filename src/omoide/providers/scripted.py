"""A scripted chat model: a real :class:`~omoide.providers.base.ChatModel` whose answers
come from a script instead of a network service.

For tests and demos of code that calls a chat model (the context guard, tool loops,
answer pipelines): it records every request, answers from a list or a function, can
stream, and behaves like a provider with a small context window, raising the typed
:class:`~omoide.errors.ContextOverflow` when a prompt is over ``overflow_above`` tokens
(counted with the same :class:`~omoide.providers.base.TokenCounter` omoide uses).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from omoide.errors import ContextOverflow, ProviderError
from omoide.models import ContentBlock, Message, TextBlock
from omoide.providers.base import (
    ChatResponse,
    StopReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    TokenCounter,
    ToolSpec,
    Usage,
)


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One recorded call."""

    messages: tuple[Message, ...]
    system: str | None
    tools: tuple[ToolSpec, ...]
    max_tokens: int
    temperature: float | None
    top_p: float | None
    prompt_tokens: int


Reply = ChatResponse | str | Sequence[ContentBlock] | ProviderError
Script = Sequence[Reply] | Callable[[ChatRequest], Reply]


@dataclass
class ScriptedChatModel:
    """Answers from ``script``: a list consumed in order, or a function of the request.

    A reply may be a string, content blocks, a full :class:`ChatResponse`, or a
    :class:`~omoide.errors.ProviderError` to raise.

    Args:
        script: the replies.
        counter: counts prompt tokens (for ``overflow_above`` and ``usage``).
        overflow_above: raise ``ContextOverflow`` for prompts over this many tokens.
    """

    script: Script
    counter: TokenCounter | None = None
    overflow_above: int | None = None
    provider: str = "scripted"
    model_id: str = "scripted"
    calls: list[ChatRequest] = field(default_factory=list)
    _next: int = 0

    def _request(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolSpec],
        max_tokens: int,
        temperature: float | None,
        top_p: float | None,
    ) -> ChatRequest:
        tokens = self.counter.count_messages(messages, system=system, tools=tools) if self.counter else 0
        return ChatRequest(tuple(messages), system, tuple(tools), max_tokens, temperature, top_p, tokens)

    def _reply(self, request: ChatRequest) -> ChatResponse:
        self.calls.append(request)
        if self.overflow_above is not None and request.prompt_tokens > self.overflow_above:
            raise ContextOverflow(
                f"prompt is too long: {request.prompt_tokens} tokens > {self.overflow_above} maximum",
                provider=self.provider,
                status_code=400,
                prompt_tokens=request.prompt_tokens,
                limit=self.overflow_above,
            )
        if callable(self.script):
            reply = self.script(request)
        else:
            if self._next >= len(self.script):
                raise ProviderError(f"the script has only {len(self.script)} replies", provider=self.provider)
            reply = self.script[self._next]
            self._next += 1
        if isinstance(reply, ProviderError):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        content: tuple[ContentBlock, ...] = (TextBlock(reply),) if isinstance(reply, str) else tuple(reply)
        stop: StopReason = "tool_use" if any(b.type == "tool_use" for b in content) else "end_turn"
        text_tokens = sum(len(b.text) for b in content if isinstance(b, TextBlock))
        return ChatResponse(content, stop, Usage(request.prompt_tokens, text_tokens), self.model_id)

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
        return self._reply(self._request(messages, system, tools, max_tokens, temperature, top_p))

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
        response = self._reply(self._request(messages, system, tools, max_tokens, temperature, top_p))
        text = response.text
        for start in range(0, len(text), 8):
            yield TextDelta(text[start : start + 8])
        yield StreamDone(response)


__all__ = ["ChatRequest", "Reply", "Script", "ScriptedChatModel"]
