"""Cohere reranker (``/v2/rerank``) through the official ``cohere`` SDK.

Seed 004's pipeline reranks the ~15 fused hits down to 5 with ``rerank-v3.5``. Scores are
Cohere's ``relevance_score`` in [0, 1], higher is more relevant. The SDK's retries are
disabled (``max_retries=0``); :mod:`omoide.providers._retry` retries and
:func:`omoide.providers._errors.cohere_errors` maps the errors (an invalid key — HTTP 401
or Cohere's 498 "invalid api token" — is :class:`~omoide.errors.AuthenticationFailed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from omoide.errors import ConfigError, ProviderError
from omoide.providers._errors import cohere_errors
from omoide.providers._retry import RetryPolicy, call_with_retries
from omoide.providers.base import RerankResult

if TYPE_CHECKING:
    import cohere


class CohereReranker:
    """Rerank candidates with a Cohere rerank model.

    Args:
        model: the model id, e.g. ``rerank-v3.5``.
        api_key: the API key (the registry reads ``CO_API_KEY`` or ``COHERE_API_KEY``).
        base_url: another endpoint (a proxy, or a test server); ``None`` = Cohere's.
        timeout: seconds allowed for one attempt.
        retry: the retry policy.
    """

    provider = "cohere"

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
            import cohere
            import httpx
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError("the cohere provider needs its SDK: pip install 'omoide[cohere]'") from exc
        self.model = model
        self.model_id = f"cohere:{model}"
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        # our own httpx client, so that we can close it; the SDK's retries are off
        self._http = httpx.AsyncClient(timeout=timeout)
        self._client: cohere.AsyncClientV2 = cohere.AsyncClientV2(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0, httpx_client=self._http
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> CohereReranker:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def rerank(self, query: str, documents: Sequence[str], *, top_k: int | None = None) -> list[RerankResult]:
        """Score ``documents`` against ``query``; best first, at most ``top_k``."""
        if not documents:
            return []
        top_n = min(top_k, len(documents)) if top_k is not None else None
        params: dict[str, Any] = {"model": self.model, "query": query, "documents": list(documents)}
        if top_n is not None:
            params["top_n"] = top_n

        async def attempt() -> list[RerankResult]:
            with cohere_errors(self.provider):
                response = await self._client.rerank(**params)
            results = [RerankResult(index=r.index, score=float(r.relevance_score)) for r in response.results]
            if any(not 0 <= r.index < len(documents) for r in results):
                raise ProviderError(f"cohere: {self.model} returned an index outside the documents", provider="cohere")
            return sorted(results, key=lambda r: r.score, reverse=True)[:top_n]

        return await call_with_retries(
            attempt, policy=self._retry, attempt_timeout=self._timeout, provider=self.provider, what="rerank"
        )


__all__ = ["CohereReranker"]
