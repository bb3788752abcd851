"""A thin instrumentation wrapper around a provider: latency, errors and tokens, and a span per call.

One wrapper per role instead of code in every provider: :func:`instrument_provider` wraps the
chat model, embedder or reranker the engine built, and every call through it is timed
(``omoide_provider_call_seconds``), counted when it fails (``omoide_provider_call_errors``, by
omoide's error code: ``RATE_LIMITED``, ``PROVIDER_UNAVAILABLE``…), and its tokens added
(``omoide_provider_tokens`` from the response's usage; ``omoide_provider_embedded_texts``).
Everything else (``model_id``, ``dimensions``, provider-specific attributes) is the wrapped
provider's, read through.

The span names the role, model and call — never the prompt, the texts or the query.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

from omoide.observability.metrics import active_metrics
from omoide.observability.tracing import span
from omoide.providers.base import ChatResponse, RerankResult, StreamDone, StreamEvent, Vector

T = TypeVar("T")


def _code(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) else type(exc).__name__


class _Instrumented:
    """Reads every attribute it does not define through to ``inner``."""

    _role = ""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    @property
    def _model(self) -> str:
        return str(getattr(self.inner, "model_id", "") or "unknown")

    async def _timed(self, call: str, run: Callable[[], Awaitable[T]], **span_attributes: Any) -> T:
        started = time.perf_counter()
        with span(f"omoide.provider.{call}", role=self._role, model=self._model, call=call, **span_attributes) as s:
            try:
                result = await run()
            except Exception as exc:
                self._count_error(exc)
                raise
            finally:
                self._observe(call, started)
            if isinstance(result, ChatResponse):
                self._count_tokens(result)
                s.set(**{"tokens.input": result.usage.input_tokens, "tokens.output": result.usage.output_tokens})
            return result

    def _count_error(self, exc: BaseException) -> None:
        m = active_metrics()
        if m is not None:
            m.provider_errors.labels(role=self._role, model=self._model, code=_code(exc)).inc()

    def _observe(self, call: str, started: float) -> None:
        """The call's latency, from ``started`` (``time.perf_counter()``) to now."""
        m = active_metrics()
        if m is not None:
            m.provider_seconds.labels(role=self._role, model=self._model, call=call).observe(
                time.perf_counter() - started
            )

    def _count_tokens(self, response: ChatResponse) -> None:
        m = active_metrics()
        if m is not None:
            model = response.model or self._model
            m.tokens.labels(model=model, kind="input").inc(response.usage.input_tokens)
            m.tokens.labels(model=model, kind="output").inc(response.usage.output_tokens)


class InstrumentedChatModel(_Instrumented):
    """A :class:`~omoide.providers.base.ChatModel` whose calls are measured."""

    _role = "llm"

    async def complete(self, messages: Sequence[Any], **kwargs: Any) -> ChatResponse:
        return await self._timed("complete", lambda: self.inner.complete(messages, **kwargs))

    async def stream(self, messages: Sequence[Any], **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """The stream is timed from the call to its ``StreamDone`` (whose usage is counted)."""
        started = time.perf_counter()
        with span("omoide.provider.stream", role=self._role, model=self._model, call="stream"):
            try:
                async for event in self.inner.stream(messages, **kwargs):
                    if isinstance(event, StreamDone):
                        self._count_tokens(event.response)
                    yield event
            except Exception as exc:
                self._count_error(exc)
                raise
            finally:
                self._observe("stream", started)


class InstrumentedEmbedder(_Instrumented):
    """An :class:`~omoide.providers.base.Embedder` whose calls are measured."""

    _role = "embedder"

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        vectors: list[Vector] = await self._timed(
            "embed_documents", lambda: self.inner.embed_documents(texts), count=len(texts)
        )
        m = active_metrics()
        if m is not None:
            m.embedded_texts.labels(model=self._model).inc(len(texts))
        return vectors

    async def embed_query(self, text: str) -> Vector:
        vector: Vector = await self._timed("embed_query", lambda: self.inner.embed_query(text))
        m = active_metrics()
        if m is not None:
            m.embedded_texts.labels(model=self._model).inc()
        return vector


class InstrumentedReranker(_Instrumented):
    """A :class:`~omoide.providers.base.Reranker` whose calls are measured."""

    _role = "reranker"

    async def rerank(self, query: str, documents: Sequence[str], *, top_k: int | None = None) -> list[RerankResult]:
        return await self._timed(
            "rerank", lambda: self.inner.rerank(query, documents, top_k=top_k), count=len(documents)
        )


_WRAPPERS: dict[str, type[_Instrumented]] = {
    "llm": InstrumentedChatModel,
    "embedder": InstrumentedEmbedder,
    "reranker": InstrumentedReranker,
}


def instrument_provider(provider: T, role: str) -> T:
    """``provider`` wrapped for ``role`` (``llm``, ``embedder``, ``reranker``); ``None`` and an already
    wrapped provider are returned as they are.

    Example:
        >>> embedder = instrument_provider(build_embedder(settings), "embedder")  # doctest: +SKIP
    """
    if provider is None or isinstance(provider, _Instrumented):
        return provider
    wrapper = _WRAPPERS.get(role)
    if wrapper is None:
        raise ValueError(f"unknown provider role {role!r}; one of {', '.join(_WRAPPERS)}")
    return wrapper(provider)  # type: ignore[return-value]  # it answers the role's protocol


__all__ = ["InstrumentedChatModel", "InstrumentedEmbedder", "InstrumentedReranker", "instrument_provider"]
