"""Voyage reranker and embedder: the real ``voyageai`` SDK against a local server."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.errors import AuthenticationFailed, BadRequest, ContextOverflow, ProviderUnavailable, RateLimited
from omoide.providers import RerankResult, RetryPolicy
from omoide.providers.voyage import VoyageEmbedder, VoyageReranker

from .servers import FAST_RETRY, NO_RETRY, ScriptedServer, closed_port_url
from .servers import voyage_api as api

DOCS = ["今日は晴れです", "andyは友達です", "The stock market fell"]


def reranker(server: ScriptedServer, *, retry: RetryPolicy = FAST_RETRY, timeout: float = 5.0) -> VoyageReranker:
    return VoyageReranker("rerank-2", api_key="pa-test", base_url=server.url + "/v1", timeout=timeout, retry=retry)


def embedder(server: ScriptedServer, *, dimensions: int = 3, send: bool = False) -> VoyageEmbedder:
    return VoyageEmbedder(
        "voyage-3.5",
        dimensions=dimensions,
        send_dimensions=send,
        api_key="pa-test",
        base_url=server.url + "/v1",
        retry=FAST_RETRY,
    )


async def test_rerank_returns_best_first() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(1, 0.81), (0, 0.2)]))
        async with reranker(server) as rr:
            results = await rr.rerank("andyって誰？", DOCS, top_k=2)
    assert rr.model_id == "voyage:rerank-2"
    assert results == [RerankResult(1, 0.81), RerankResult(0, 0.2)]
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer pa-test"
    sent = request.json
    assert (sent["query"], sent["documents"], sent["model"], sent["top_k"]) == ("andyって誰？", DOCS, "rerank-2", 2)


async def test_an_index_outside_the_documents_is_a_provider_error() -> None:
    from omoide.errors import ProviderError

    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(7, 0.5)]))
        async with reranker(server) as rr:
            with pytest.raises(ProviderError, match="outside the documents"):
                await rr.rerank("q", DOCS)


async def test_429_with_retry_after_is_honoured() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rate_limited("0.2"), api.rerank([(0, 0.5)]))
        async with reranker(server) as rr:
            assert await rr.rerank("q", DOCS[:1]) == [RerankResult(0, 0.5)]
    first, second = server.requests
    assert second.at - first.at >= 0.19


async def test_too_long_retry_after_is_raised() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rate_limited("120"))
        async with reranker(server) as rr:
            with pytest.raises(RateLimited) as caught:
                await rr.rerank("q", DOCS)
    assert caught.value.retry_after == 120


async def test_5xx_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.SERVER_ERROR, api.SERVICE_UNAVAILABLE, api.rerank([(0, 0.5)]))
        async with reranker(server) as rr:
            await rr.rerank("q", DOCS[:1])
    assert len(server.requests) == 3


async def test_invalid_key_is_authentication_failed_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.INVALID_API_KEY)
        async with reranker(server) as rr:
            with pytest.raises(AuthenticationFailed) as caught:
                await rr.rerank("q", DOCS)
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


async def test_other_4xx_is_bad_request_not_overflow() -> None:
    # "max allowed tokens per submitted batch" talks about tokens but is a plain 400
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.BAD_REQUEST)
        async with reranker(server) as rr:
            with pytest.raises(BadRequest) as caught:
                await rr.rerank("q", DOCS)
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


async def test_timeout_is_unavailable() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(0, 1.0)]).delayed(5))
        async with reranker(server, retry=NO_RETRY, timeout=0.3) as rr:
            with pytest.raises(ProviderUnavailable):
                await rr.rerank("q", DOCS[:1])


async def test_connection_refused_is_unavailable() -> None:
    rr = VoyageReranker("rerank-2", api_key="k", base_url=closed_port_url() + "/v1", retry=FAST_RETRY)
    with pytest.raises(ProviderUnavailable):
        await rr.rerank("q", DOCS)


async def test_embeddings_use_input_types_and_are_normalised() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.embeddings([[3, 4, 0], [0, 0, 2]]), api.embeddings([[0, 5, 0]]))
        async with embedder(server) as emb:
            docs = await emb.embed_documents(["a", "b"])
            query = await emb.embed_query("q")
    assert emb.model_id == "voyage:voyage-3.5@3"
    np.testing.assert_allclose(docs[0], [0.6, 0.8, 0], rtol=1e-6)
    np.testing.assert_allclose(query, [0, 1, 0])
    assert server.requests[0].json["input_type"] == "document"
    assert server.requests[1].json["input_type"] == "query"
    assert server.requests[0].json.get("output_dimension") is None


async def test_embedding_output_dimension_is_sent_when_asked_and_checked() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.embeddings([[1, 0]]))
        async with embedder(server, dimensions=3, send=True) as emb:
            with pytest.raises(BadRequest, match="2-dimensional embeddings but 3 are configured"):
                await emb.embed_query("q")
    assert server.requests[0].json["output_dimension"] == 3
