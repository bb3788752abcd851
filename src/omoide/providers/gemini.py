"""Gemini chat and embeddings through the official ``google-genai`` SDK (Gemini API).

Chat conversion at this edge:

* roles ``user`` / ``assistant`` → ``user`` / ``model``; the system prompt is
  ``system_instruction``; tools become ``function_declarations`` with their JSON Schema;
* ``tool_use`` ↔ ``functionCall`` parts; ``tool_result`` → ``functionResponse`` parts with
  ``{"output": …}`` (or ``{"error": …}``). Gemini needs the *function name* in a response,
  so it is looked up from the ``tool_use`` block with the same id. Calls that arrive
  without an id get a local one (``gemini-call-…``), which is not sent back;
* thought signatures (Gemini 2.5 / 3 return one with a function call and want it back in
  the next turn) are remembered per call id by this object and re-attached, so a tool loop
  within one process keeps working; thought parts are not part of the answer text;
* finish reasons: ``STOP`` → ``end_turn`` (``tool_use`` when the answer holds calls),
  ``MAX_TOKENS`` → ``max_tokens``, the safety / recitation / blocklist family →
  ``refusal``, anything else → ``other``.

Embeddings use ``gemini-embedding-001`` (3072 dims natively; 1536 and 768 are the other
recommended ``output_dimensionality`` values) with task types ``RETRIEVAL_DOCUMENT`` for
passages and ``RETRIEVAL_QUERY`` for queries; shortened vectors are not normalised by the
API, so they are L2-normalised here like every other embedder's.

The SDK's retries, including its implicit retry of connection errors, are disabled
(``HttpRetryOptions(attempts=1)``), and it runs on an ``httpx2`` client this module owns
(instead of its default aiohttp session), so ``aclose()`` releases every connection.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from omoide.errors import ConfigError, InvalidContent, ProviderError
from omoide.models import ContentBlock, Message, TextBlock, ToolUseBlock
from omoide.providers._errors import gemini_errors
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
from omoide.providers.context import ModelLimits

if TYPE_CHECKING:
    import httpx2
    from google import genai
    from google.genai import types

_LOCAL_ID_PREFIX = "gemini-call-"
_REFUSALS = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT"}
)
_MAX_SIGNATURES = 1024


def _client(api_key: str, base_url: str | None, timeout: float) -> tuple[genai.Client, httpx2.AsyncClient]:
    """A Gemini API client on our own ``httpx2`` client (closed by ``aclose``), SDK retries off."""
    try:
        import httpx2
        from google import genai
        from google.genai import types
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("the gemini provider needs its SDK: pip install 'omoide[gemini]'") from exc
    http = httpx2.AsyncClient(timeout=timeout)
    options = types.HttpOptions(
        base_url=base_url,
        timeout=max(1, int(timeout * 1000)),
        retry_options=types.HttpRetryOptions(attempts=1),
        httpx_async_client=http,
    )
    return genai.Client(api_key=api_key, vertexai=False, http_options=options), http


def _stop_reason(finish: str | None, has_calls: bool) -> StopReason:
    if finish in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "tool_use" if has_calls else ("end_turn" if finish else "other")
    if finish == "MAX_TOKENS":
        return "max_tokens"
    if finish in _REFUSALS:
        return "refusal"
    return "other"


class _Converter:
    """Messages ↔ Gemini contents, remembering thought signatures by call id."""

    def __init__(self) -> None:
        self._signatures: OrderedDict[str, bytes] = OrderedDict()

    def remember(self, call_id: str, signature: bytes | None) -> None:
        if signature:
            self._signatures[call_id] = signature
            self._signatures.move_to_end(call_id)
            while len(self._signatures) > _MAX_SIGNATURES:
                self._signatures.popitem(last=False)

    def contents(self, messages: Sequence[Message]) -> list[types.Content]:
        from google.genai import types

        names = {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
        out: list[types.Content] = []
        for message in messages:
            parts: list[types.Part] = []
            for block in message.content:
                if isinstance(block, TextBlock):
                    parts.append(types.Part(text=block.text))
                elif isinstance(block, ToolUseBlock):
                    call = types.FunctionCall(
                        id=None if block.id.startswith(_LOCAL_ID_PREFIX) else block.id,
                        name=block.name,
                        args=dict(block.input),
                    )
                    parts.append(types.Part(function_call=call, thought_signature=self._signatures.get(block.id)))
                else:
                    name = names.get(block.tool_use_id)
                    if name is None:
                        raise InvalidContent(
                            f"gemini needs the tool name for tool_result {block.tool_use_id!r}: include the "
                            "assistant turn with the matching tool_use block"
                        )
                    key = "error" if block.is_error else "output"
                    response = types.FunctionResponse(
                        id=None if block.tool_use_id.startswith(_LOCAL_ID_PREFIX) else block.tool_use_id,
                        name=name,
                        response={key: block.content},
                    )
                    parts.append(types.Part(function_response=response))
            role = "model" if message.role == "assistant" else "user"
            if out and out[-1].role == role and out[-1].parts is not None:
                out[-1].parts.extend(parts)
            else:
                out.append(types.Content(role=role, parts=parts))
        return out

    def blocks(self, parts: Sequence[types.Part]) -> list[ContentBlock]:
        """Response parts → blocks (adjacent text merged, thoughts dropped)."""
        content: list[ContentBlock] = []
        for part in parts:
            if part.thought:
                continue
            if part.function_call is not None:
                call = part.function_call
                call_id = call.id or f"{_LOCAL_ID_PREFIX}{uuid.uuid4().hex}"
                self.remember(call_id, part.thought_signature)
                content.append(ToolUseBlock(call_id, call.name or "", dict(call.args or {})))
            elif part.text:
                if content and isinstance(content[-1], TextBlock):
                    content[-1] = TextBlock(content[-1].text + part.text)
                else:
                    content.append(TextBlock(part.text))
        return content


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if metadata is None:
        return Usage()
    output = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(input_tokens=metadata.prompt_token_count or 0, output_tokens=output)


class GeminiChatModel:
    """Gemini through ``generateContent`` / ``streamGenerateContent``.

    Args:
        model: the model id, e.g. ``gemini-2.5-flash``.
        api_key: the API key (the registry reads ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``).
        base_url: another endpoint (a proxy, or a test server); ``None`` = the SDK default.
        timeout: seconds allowed for one attempt.
        retry: the retry policy.
    """

    provider = "gemini"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model_id = model
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client, self._http = _client(api_key, base_url, timeout)
        self._convert = _Converter()

    async def aclose(self) -> None:
        """Close the SDK client and its HTTP connection pool."""
        await self._client.aio.aclose()
        self._client.close()
        await self._http.aclose()

    async def __aenter__(self) -> GeminiChatModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _config(
        self,
        system: str | None,
        tools: Sequence[ToolSpec],
        max_tokens: int,
        temperature: float | None,
        top_p: float | None,
    ) -> types.GenerateContentConfig:
        from google.genai import types

        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=dict(t.input_schema)
            )
            for t in tools
        ]
        return types.GenerateContentConfig(
            system_instruction=system or None,
            max_output_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            tools=[types.Tool(function_declarations=declarations)] if declarations else None,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    def _response(self, response: types.GenerateContentResponse) -> ChatResponse:
        if not response.candidates:
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            return ChatResponse(
                content=(),
                stop_reason="refusal" if blocked else "other",
                usage=_usage(response.usage_metadata),
                model=response.model_version or self.model_id,
            )
        candidate = response.candidates[0]
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        content = self._convert.blocks(parts)
        finish = candidate.finish_reason.value if candidate.finish_reason else None
        return ChatResponse(
            content=tuple(content),
            stop_reason=_stop_reason(finish, any(isinstance(b, ToolUseBlock) for b in content)),
            usage=_usage(response.usage_metadata),
            model=response.model_version or self.model_id,
        )

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
        contents = self._convert.contents(messages)
        config = self._config(system, tools, max_tokens, temperature, top_p)

        async def attempt() -> ChatResponse:
            with gemini_errors(self.provider):
                response = await self._client.aio.models.generate_content(
                    model=self.model_id, contents=contents, config=config
                )
            return self._response(response)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="chat"
        )

    async def count_tokens(
        self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
    ) -> int:
        """Input tokens of the messages, counted by the API (``countTokens``; needs network).

        The Gemini API's ``countTokens`` takes no system instruction or tools, so the system
        prompt is counted as one more user turn and the tools are not counted.
        """
        from google.genai import types

        contents = self._convert.contents(messages)
        if system:
            contents.insert(0, types.Content(role="user", parts=[types.Part(text=system)]))

        async def attempt() -> int:
            with gemini_errors(self.provider):
                counted = await self._client.aio.models.count_tokens(model=self.model_id, contents=contents)
            return int(counted.total_tokens or 0)

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="count_tokens"
        )

    async def fetch_limits(self) -> ModelLimits:
        """The model's limits from the models endpoint (``inputTokenLimit``, ``outputTokenLimit``).

        Raises:
            ProviderError: the API does not report them for this model.
        """

        async def attempt() -> ModelLimits:
            with gemini_errors(self.provider):
                info = await self._client.aio.models.get(model=self.model_id)
            if not info.input_token_limit:
                raise ProviderError(
                    f"gemini: no input token limit reported for {self.model_id}", provider=self.provider
                )
            return ModelLimits(info.input_token_limit, info.output_token_limit or 0, True)

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
        contents = self._convert.contents(messages)
        config = self._config(system, tools, max_tokens, temperature, top_p)

        async def open_stream() -> AsyncIterator[types.GenerateContentResponse]:
            return await self._client.aio.models.generate_content_stream(
                model=self.model_id, contents=contents, config=config
            )

        async def close(iterator: AsyncIterator[types.GenerateContentResponse]) -> None:
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                await closer()

        blocks: list[ContentBlock] = []
        finish: str | None = None
        usage = Usage()
        model = self.model_id
        chunks = retrying_stream(
            open_stream,
            close,
            errors=lambda: gemini_errors(self.provider),
            policy=self._retry,
            attempt_timeout=self._timeout,
            provider=self.provider,
        )
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                model = chunk.model_version or model
                if chunk.usage_metadata is not None:
                    usage = _usage(chunk.usage_metadata)
                if not chunk.candidates:
                    continue
                candidate = chunk.candidates[0]
                if candidate.finish_reason:
                    finish = candidate.finish_reason.value
                parts = candidate.content.parts if candidate.content and candidate.content.parts else []
                for block in self._convert.blocks(parts):
                    if isinstance(block, TextBlock):
                        yield TextDelta(block.text)
                        if blocks and isinstance(blocks[-1], TextBlock):
                            blocks[-1] = TextBlock(blocks[-1].text + block.text)
                            continue
                    blocks.append(block)
        has_calls = any(isinstance(b, ToolUseBlock) for b in blocks)
        response = ChatResponse(tuple(blocks), _stop_reason(finish, has_calls), usage, model)
        yield StreamDone(response)


class GeminiEmbedder:
    """Gemini embeddings (``gemini-embedding-001``) with retrieval task types.

    Args:
        model: the embedding model id.
        dimensions: ``output_dimensionality`` (3072, 1536 or 768 recommended).
        api_key / base_url / timeout / retry: as for :class:`GeminiChatModel`.
        max_batch: inputs per ``batchEmbedContents`` request (the API allows 100).
    """

    provider = "gemini"

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        *,
        dimensions: int = 3072,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_batch: int = 100,
    ) -> None:
        if dimensions <= 0:
            raise ConfigError(f"gemini:{model}: dimensions must be positive, got {dimensions}")
        self.model = model
        self.dimensions = dimensions
        self.max_batch = max_batch
        self.model_id = f"gemini:{model}@{dimensions}"
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client, self._http = _client(api_key, base_url, timeout)

    async def aclose(self) -> None:
        """Close the SDK client and its HTTP connection pool."""
        await self._client.aio.aclose()
        self._client.close()
        await self._http.aclose()

    async def __aenter__(self) -> GeminiEmbedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _embed(self, texts: Sequence[str], task_type: str) -> list[Vector]:
        from google.genai import types

        config = types.EmbedContentConfig(task_type=task_type, output_dimensionality=self.dimensions)

        async def attempt() -> list[Vector]:
            with gemini_errors(self.provider):
                response = await self._client.aio.models.embed_content(
                    model=self.model, contents=cast(Any, list(texts)), config=config
                )
            rows: list[Any] = [e.values or [] for e in response.embeddings or []]
            return to_vectors(
                rows, dimensions=self.dimensions, expected=len(texts), provider=self.provider, model=self.model
            )

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="embed"
        )

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages (task type ``RETRIEVAL_DOCUMENT``), ``max_batch`` per request."""
        check_texts(texts, what=f"{self.model_id} embed_documents")
        out: list[Vector] = []
        for batch in batches(texts, self.max_batch):
            out.extend(await self._embed(batch, "RETRIEVAL_DOCUMENT"))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (task type ``RETRIEVAL_QUERY``)."""
        check_texts([text], what=f"{self.model_id} embed_query")
        return (await self._embed([text], "RETRIEVAL_QUERY"))[0]


__all__ = ["GeminiChatModel", "GeminiEmbedder"]
