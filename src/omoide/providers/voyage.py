"""Voyage AI reranker and embeddings through the official ``voyageai`` SDK.

Rerank models such as ``rerank-2`` / ``rerank-2.5`` return ``relevance_score`` per
document, higher is more relevant. Embeddings (``voyage-3.5``, ``voyage-3-large``, …) are
asymmetric: passages are sent with ``input_type="document"``, queries with
``input_type="query"``; ``output_dimension`` is sent only when the spec asked for one.

The SDK's retries are disabled (``max_retries=0``, which is also its default);
:mod:`omoide.providers._retry` retries and :func:`omoide.providers._errors.voyage_errors`
maps the errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omoide.errors import ConfigError, ProviderError
from omoide.providers._errors import voyage_errors
from omoide.providers._retry import RetryPolicy, call_with_retries
from omoide.providers._vectors import batches, check_texts, to_vectors
from omoide.providers.base import RerankResult, Vector

if TYPE_CHECKING:
    from voyageai.client_async import AsyncClient


def _client(api_key: str, base_url: str | None, timeout: float) -> AsyncClient:
    try:
        from voyageai.client_async import AsyncClient
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("the voyage provider needs its SDK: pip install 'omoide[voyage]'") from exc
    return AsyncClient(api_key=api_key, max_retries=0, timeout=timeout, base_url=base_url)


class VoyageReranker:
    """Rerank candidates with a Voyage rerank model.

    Args:
        model: the model id, e.g. ``rerank-2``.
        api_key: the API key (the registry reads ``VOYAGE_API_KEY``).
        base_url: another endpoint including ``/v1`` (a proxy, a test server); ``None`` = Voyage's.
        timeout: seconds allowed for one attempt.
        retry: the retry policy.
    """

    provider = "voyage"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.model_id = f"voyage:{model}"
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client = _client(api_key, base_url, timeout)

    async def aclose(self) -> None:
        """Nothing to release: the SDK opens one HTTP session per request."""

    async def __aenter__(self) -> VoyageReranker:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def rerank(self, query: str, documents: Sequence[str], *, top_k: int | None = None) -> list[RerankResult]:
        """Score ``documents`` against ``query``; best first, at most ``top_k``."""
        if not documents:
            return []
        top = min(top_k, len(documents)) if top_k is not None else None

        async def attempt() -> list[RerankResult]:
            try:
                with voyage_errors(self.provider):
                    response = await self._client.rerank(query, list(documents), self.model, top_k=top)
            except IndexError as exc:  # the SDK looks the documents up by the returned positions
                raise ProviderError(
                    f"voyage: {self.model} returned an index outside the documents", provider=self.provider
                ) from exc
            results = [RerankResult(index=int(r.index), score=float(r.relevance_score)) for r in response.results]
            return sorted(results, key=lambda r: r.score, reverse=True)[:top]

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="rerank"
        )


class VoyageEmbedder:
    """Voyage embeddings with query/document input types.

    Args:
        model: the model id, e.g. ``voyage-3.5``.
        dimensions: the vector length (``voyage-3.5``: 1024 native; 256, 512, 2048 on request).
        api_key / base_url / timeout / retry: as for :class:`VoyageReranker`.
        send_dimensions: send ``output_dimension`` (when the spec asked for a size).
        max_batch: texts per request (the API allows 1000, within a token budget).
    """

    provider = "voyage"

    def __init__(
        self,
        model: str,
        *,
        dimensions: int,
        api_key: str,
        base_url: str | None = None,
        send_dimensions: bool = False,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_batch: int = 128,
    ) -> None:
        if dimensions <= 0:
            raise ConfigError(f"voyage:{model}: dimensions must be positive, got {dimensions}")
        self.model = model
        self.dimensions = dimensions
        self.max_batch = max_batch
        self.model_id = f"voyage:{model}@{dimensions}"
        self._send_dimensions = send_dimensions
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._client = _client(api_key, base_url, timeout)

    async def aclose(self) -> None:
        """Nothing to release: the SDK opens one HTTP session per request."""

    async def __aenter__(self) -> VoyageEmbedder:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _embed(self, texts: Sequence[str], input_type: str) -> list[Vector]:
        dims = self.dimensions if self._send_dimensions else None

        async def attempt() -> list[Vector]:
            with voyage_errors(self.provider):
                result = await self._client.embed(
                    list(texts), model=self.model, input_type=input_type, output_dimension=dims
                )
            rows: list[Any] = list(result.embeddings)
            return to_vectors(
                rows, dimensions=self.dimensions, expected=len(texts), provider=self.provider, model=self.model
            )

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="embed"
        )

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed passages (``input_type="document"``), ``max_batch`` per request."""
        check_texts(texts, what=f"{self.model_id} embed_documents")
        out: list[Vector] = []
        for batch in batches(texts, self.max_batch):
            out.extend(await self._embed(batch, "document"))
        return out

    async def embed_query(self, text: str) -> Vector:
        """Embed a search query (``input_type="query"``)."""
        check_texts([text], what=f"{self.model_id} embed_query")
        return (await self._embed([text], "query"))[0]


__all__ = ["VoyageEmbedder", "VoyageReranker"]
