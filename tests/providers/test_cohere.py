"""CohereReranker: the real ``cohere`` SDK against a local ``/v2/rerank`` server."""

from __future__ import annotations

import pytest

from omoide.errors import AuthenticationFailed, BadRequest, ContextOverflow, ProviderUnavailable, RateLimited
from omoide.providers import RerankResult, RetryPolicy
from omoide.providers.cohere import CohereReranker

from .servers import FAST_RETRY, NO_RETRY, Reply, ScriptedServer, closed_port_url
from .servers import cohere_api as api

DOCS = ["今日は晴れです", "andyは友達です", "The stock market fell"]


def reranker(server: ScriptedServer, *, retry: RetryPolicy = FAST_RETRY, timeout: float = 5.0) -> CohereReranker:
    return CohereReranker("rerank-v3.5", api_key="co-test", base_url=server.url, timeout=timeout, retry=retry)


async def test_rerank_sends_v2_rerank_and_returns_best_first() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(1, 0.92), (0, 0.11), (2, 0.01)]))
        async with reranker(server) as rr:
            results = await rr.rerank("andyって誰？", DOCS, top_k=2)
    assert rr.model_id == "cohere:rerank-v3.5"
    assert results == [RerankResult(1, 0.92), RerankResult(0, 0.11)]
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer co-test"
    assert request.json == {"model": "rerank-v3.5", "query": "andyって誰？", "documents": DOCS, "top_n": 2}


async def test_results_are_sorted_even_if_the_server_is_not() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(0, 0.2), (2, 0.9), (1, 0.5)]))
        async with reranker(server) as rr:
            results = await rr.rerank("q", DOCS)
    assert [r.index for r in results] == [2, 1, 0]
    assert "top_n" not in server.requests[0].json


async def test_no_documents_makes_no_request() -> None:
    async with ScriptedServer() as server, reranker(server) as rr:
        assert await rr.rerank("q", []) == []
    assert server.requests == []


async def test_429_with_retry_after_is_honoured() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rate_limited("0.2"), api.rerank([(0, 0.5)]))
        async with reranker(server) as rr:
            results = await rr.rerank("q", DOCS[:1])
    assert results == [RerankResult(0, 0.5)]
    first, second = server.requests
    assert second.at - first.at >= 0.19


async def test_too_long_retry_after_is_raised() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rate_limited("60"))
        async with reranker(server) as rr:
            with pytest.raises(RateLimited) as caught:
                await rr.rerank("q", DOCS)
    assert caught.value.retry_after == 60
    assert len(server.requests) == 1


async def test_5xx_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.SERVER_ERROR, api.SERVICE_UNAVAILABLE, api.rerank([(0, 0.5)]))
        async with reranker(server) as rr:
            await rr.rerank("q", DOCS[:1])
    assert len(server.requests) == 3  # the SDK's own retries are off


@pytest.mark.parametrize("reply", [api.INVALID_API_TOKEN, api.INVALID_TOKEN_498], ids=["401", "498"])
async def test_invalid_api_token_is_authentication_failed_never_overflow(reply: Reply) -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, reply)
        async with reranker(server) as rr:
            with pytest.raises(AuthenticationFailed) as caught:
                await rr.rerank("q", DOCS)
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


async def test_other_4xx_is_bad_request() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.BAD_REQUEST)
        async with reranker(server) as rr:
            with pytest.raises(BadRequest, match="query must be a non-empty string"):
                await rr.rerank("", DOCS)
    assert len(server.requests) == 1


async def test_timeout_is_unavailable() -> None:
    async with ScriptedServer() as server:
        server.script(api.RERANK_PATH, api.rerank([(0, 1.0)]).delayed(5))
        async with reranker(server, retry=NO_RETRY, timeout=0.3) as rr:
            with pytest.raises(ProviderUnavailable):
                await rr.rerank("q", DOCS[:1])


async def test_connection_refused_is_unavailable() -> None:
    async with CohereReranker("rerank-v3.5", api_key="k", base_url=closed_port_url(), retry=FAST_RETRY) as rr:
        with pytest.raises(ProviderUnavailable):
            await rr.rerank("q", DOCS)
