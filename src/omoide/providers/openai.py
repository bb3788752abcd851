"""OpenAI chat and embeddings through the official ``openai`` SDK, also for any
OpenAI-compatible server (Ollama, vLLM, LM Studio) at ``OMOIDE_LLM_BASE_URL``.

Chat uses the Chat Completions API, the one every compatible server speaks. omoide's
blocks are converted at this edge:

* a user turn's ``tool_result`` blocks become ``{"role": "tool", "tool_call_id", "content"}``
  messages (placed first, right after the assistant turn that called the tools), its text
  a ``user`` message;
* an assistant turn's ``tool_use`` blocks become ``tool_calls`` with JSON-encoded
  ``arguments``; the system prompt is a leading ``system`` message;
* finish reasons: ``stop`` → ``end_turn``, ``length`` → ``max_tokens``, ``tool_calls`` →
  ``tool_use``, ``content_filter`` → ``refusal``, anything else → ``other``.

OpenAI itself gets ``max_completion_tokens`` (``max_tokens`` is deprecated there and
rejected by reasoning models); compatible servers get ``max_tokens``, which they all
accept. Streaming asks OpenAI for a final usage chunk (``stream_options``); compatible
servers are not sent that option and report usage only if they do so by themselves.

Embeddings send ``dimensions`` only when the spec asked for one (``@512``), since older
models reject the parameter; the returned length is always checked.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from omoide.errors import ConfigError, ProviderError
from omoide.models import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers._errors import openai_errors
from omoide.providers._retry import RetryPolicy, call_with_retries
from omoide.providers._streaming import retrying_stream
from omoide.providers._vectors import batches, check_texts, to_vectors
from omoide.providers.base import (
    ChatResponse,
    StopReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolSpec,
    Usage,
    Vector,
)

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _client(api_key: str, base_url: str | None, timeout: float) -> openai.AsyncOpenAI:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("the openai provider needs its SDK: pip install 'omoide[openai]'") from exc
    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)


def to_openai_messages(messages: Sequence[Message], system: str | None = None) -> list[dict[str, Any]]:
    """omoide messages → Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "assistant":
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            calls = [
                {
                    "id": b.id,
                    "type": "function",
                    "function": {"name": b.name, "arguments": json.dumps(dict(b.input), ensure_ascii=False)},
                }
                for b in message.content
                if isinstance(b, ToolUseBlock)
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = f"ERROR: {block.content}" if block.is_error else block.content
                out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
        if text or not any(isinstance(b, ToolResultBlock) for b in message.content):
            out.append({"role": "user", "content": text})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)},
        }
        for t in tools
    ]


def _tool_input(provider: str, name: str, arguments: str | None) -> dict[str, Any]:
    if not arguments:
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"{provider}: the model called tool {name!r} with arguments that are not JSON: {exc.msg}",
            provider=provider,
        ) from exc
    if not isinstance(value, dict):
        raise ProviderError(f"{provider}: the model called tool {name!r} with non-object arguments", provider=provider)
    return value


def from_openai_completion(completion: ChatCompletion, provider: str) -> ChatResponse:
    """A Chat Completions response → :class:`ChatResponse` (first choice)."""
    if not completion.choices:
        raise ProviderError(f"{provider}: the response has no choices", provider=provider)
    choice = completion.choices[0]
    content: list[ContentBlock] = []
    if choice.message.content:
        content.append(TextBlock(choice.message.content))
    elif choice.message.refusal:
        content.append(TextBlock(choice.message.refusal))
    for call in choice.message.tool_calls or ():
        if call.type == "function":
            args = _tool_input(provider, call.function.name, call.function.arguments)
            content.append(ToolUseBlock(call.id, call.function.name, args))
    usage = completion.usage
    stop = _FINISH_REASONS.get(str(choice.finish_reason), "other")
    if choice.message.refusal and not choice.message.content:
        stop = "refusal"
    return ChatResponse(
        content=tuple(content),
        stop_reason=stop,
        usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
        model=completion.model,
    )


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _StreamState:
    """Accumulates Chat Completions chunks into one response."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; return its new text."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = Usage(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        new = ""
        for choice in chunk.choices[:1]:
            delta = choice.delta
            if delta.content:
                new += delta.content
            for call in delta.tool_calls or ():
                pending = self.calls.setdefault(call.index, _PendingCall())
                if call.id:
                    pending.id = call.id
                if call.function is not None:
                    if call.function.name:
                        pending.name += call.function.name
                    if call.function.arguments:
                        pending.arguments.append(call.function.arguments)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if new:
            self.text.append(new)
        return new

    def response(self, provider: str) -> ChatResponse:
        content: list[ContentBlock] = []
        if self.text:
            content.append(TextBlock("".join(self.text)))
        for index in sorted(self.calls):
            call = self.calls[index]
            content.append(ToolUseBlock(call.id, call.name, _tool_input(provider, call.name, "".join(call.arguments))))
        return ChatResponse(
            content=tuple(content),
            stop_reason=_FINISH_REASONS.get(str(self.finish_reason), "other"),
            usage=self.usage,
            model=self.model,
        )


class OpenAIChatModel:
    """A chat model behind the Chat Completions API (OpenAI or a compatible server).

    Args:
        model: the model id, e.g. ``gpt-4o-mini`` or ``llama3``.
        api_key: the API key (compatible servers usually accept any value).
        base_url: the server's base URL including ``/v1`` (``None`` = OpenAI).
        provider: ``"openai"`` or ``"openai-compatible"`` (names errors and picks parameters).
        timeout: seconds allowed for one attempt.
        retry: the retry policy.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        provider: str = "openai",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.provider = provider
        self.model_id = model
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client = _client(api_key, base_url, timeout)

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> OpenAIChatModel:
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
        params: dict[str, Any] = {"model": self.model_id, "messages": to_openai_messages(messages, system)}
        params["max_completion_tokens" if self.provider == "openai" else "max_tokens"] = max_tokens
        if tools:
            params["tools"] = to_openai_tools(tools)
        if temperature is not None:
            params["temperature"] = temperature
        if top_p is not None:
            params["top_p"] = top_p
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
            with openai_errors(self.provider):
                completion = await self._client.chat.completions.create(**params)
            return from_openai_completion(completion, self.provider)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="chat"
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
        params["stream"] = True
        if self.provider == "openai":
            params["stream_options"] = {"include_usage": True}
        opened: list[Any] = []

        async def open_stream() -> AsyncIterator[ChatCompletionChunk]:
            stream = await self._client.chat.completions.create(**params)
            opened.append(stream)
            return stream.__aiter__()  # type: ignore[no-any-return]

        async def close(_: AsyncIterator[ChatCompletionChunk]) -> None:
            await opened[-1].close()

        state = _StreamState()
        chunks = retrying_stream(
            open_stream,
            close,
            errors=lambda: openai_errors(self.provider),
            policy=self._retry,
            attempt_timeout=self._timeout,
            provider=self.provider,
        )
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                new = state.add(chunk)
                if new:
                    yield TextDelta(new)
        yield StreamDone(state.response(self.provider))


class OpenAIEmbedder:
    """Embeddings from OpenAI (``text-embedding-3-small/large``) or a compatible server.

    Args:
        model: the embedding model id.
        dimensions: the vector length; sent as ``dimensions`` only if ``send_dimensions``.
        api_key / base_url / provider / timeout / retry: as for :class:`OpenAIChatModel`.
        send_dimensions: ask the model to shorten its vectors (text-embedding-3 models).
        max_batch: inputs per request (OpenAI accepts up to 2048).
    """

    def __init__(
        self,
        model: str,
        *,
        dimensions: int,
        api_key: str,
        base_url: str | None = None,
        provider: str = "openai",
        send_dimensions: bool = False,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_batch: int = 256,
    ) -> None:
        if dimensions <= 0:
            raise ConfigError(f"{provider}:{model}: dimensions must be positive, got {dimensions}")
        self.provider = provider
        self.model = model
        self.dimensions = dimensions
        self.max_batch = max_batch
        self.model_id = f"{provider}:{model}@{dimensions}"
        self._send_dimensions = send_dimensions
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client = _client(api_key, base_url, timeout)

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _embed(self, texts: Sequence[str]) -> list[Vector]:
        params: dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        if self._send_dimensions:
            params["dimensions"] = self.dimensions

        async def attempt() -> list[Vector]:
            with openai_errors(self.provider):
                response = await self._client.embeddings.create(**params)
            rows = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
            return to_vectors(
                rows, dimensions=self.dimensions, expected=len(texts), provider=self.provider, model=self.model
            )

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="embed"
        )

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages, ``max_batch`` per request."""
        check_texts(texts, what=f"{self.model_id} embed_documents")
        out: list[Vector] = []
        for batch in batches(texts, self.max_batch):
            out.extend(await self._embed(batch))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (OpenAI models are symmetric: same as a document)."""
        check_texts([text], what=f"{self.model_id} embed_query")
        return (await self._embed([text]))[0]


__all__ = ["OpenAIChatModel", "OpenAIEmbedder", "from_openai_completion", "to_openai_messages", "to_openai_tools"]
