"""Gemini chat and embeddings: the real ``google-genai`` SDK against a local Gemini API server."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from omoide.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextOverflow,
    InvalidContent,
    ProviderUnavailable,
    RateLimited,
)
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers import RetryPolicy, StreamDone, TextDelta, ToolSpec
from omoide.providers.gemini import GeminiChatModel, GeminiEmbedder

from .servers import FAST_RETRY, NO_RETRY, Reply, ScriptedServer, closed_port_url
from .servers import gemini_api as api

MODEL = "gemini-2.5-flash"
GENERATE = api.generate_path(MODEL)
STREAM = api.stream_path(MODEL)
EMBED = api.embed_path("gemini-embedding-001")
SEARCH = ToolSpec(
    name="search_knowledge",
    description="Search long-term memory.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def chat(server: ScriptedServer, *, retry: RetryPolicy = FAST_RETRY, timeout: float = 5.0) -> GeminiChatModel:
    return GeminiChatModel(MODEL, api_key="AIza-test", base_url=server.url, timeout=timeout, retry=retry)


def embedder(server: ScriptedServer, dimensions: int = 3, max_batch: int = 100) -> GeminiEmbedder:
    return GeminiEmbedder(
        dimensions=dimensions, api_key="AIza-test", base_url=server.url, retry=FAST_RETRY, max_batch=max_batch
    )


async def test_complete_sends_generate_content_and_maps_the_answer() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.generate({"text": "こんにちは"}, {"text": "！"}, usage=(20, 5, 7)))
        async with chat(server) as llm:
            reply = await llm.complete(
                [Message.user("hi"), Message.assistant("hello"), Message.user("元気？")],
                system="be brief",
                max_tokens=2048,
                temperature=0.3,
                top_p=0.9,
            )
    assert reply.content == (TextBlock("こんにちは！"),)
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (20, 12)  # candidates + thoughts
    [request] = server.requests
    assert request.headers["x-goog-api-key"] == "AIza-test"
    sent = request.json
    assert [c["role"] for c in sent["contents"]] == ["user", "model", "user"]
    assert sent["contents"][2]["parts"] == [{"text": "元気？"}]
    assert sent["systemInstruction"]["parts"] == [{"text": "be brief"}]
    assert sent["generationConfig"] == {"maxOutputTokens": 2048, "temperature": 0.3, "topP": 0.9}


async def test_function_calls_round_trip_with_names_and_thought_signatures() -> None:
    signature = base64.b64encode(b"opaque-signature").decode()
    async with ScriptedServer() as server:
        server.script(
            GENERATE,
            api.generate(
                {"text": "thinking about it", "thought": True},
                api.function_call("search_knowledge", {"query": "andy"}, signature=signature),
            ),
            api.generate({"text": "andy is a friend."}),
        )
        async with chat(server) as llm:
            history = [Message.user("andyって誰？")]
            first = await llm.complete(history, tools=[SEARCH])
            assert first.stop_reason == "tool_use"
            [call] = first.tool_calls
            assert (call.name, dict(call.input)) == ("search_knowledge", {"query": "andy"})
            assert first.text == ""  # the thought part is not part of the answer
            history += [first.as_message(), Message("user", (ToolResultBlock(call.id, "andy: 友達"),))]
            second = await llm.complete(history, tools=[SEARCH])
    assert second.text == "andy is a friend."
    declarations = server.requests[0].json["tools"][0]["functionDeclarations"]
    assert declarations[0]["name"] == "search_knowledge"
    replay = server.requests[1].json["contents"]
    model_turn = replay[1]
    assert model_turn["role"] == "model"
    [call_part] = model_turn["parts"]
    assert call_part["functionCall"] == {"name": "search_knowledge", "args": {"query": "andy"}}  # local id not sent
    assert call_part["thoughtSignature"] == signature
    assert replay[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "search_knowledge", "response": {"output": "andy: 友達"}}}],
    }


async def test_call_ids_from_the_api_are_kept_and_sent_back() -> None:
    async with ScriptedServer() as server:
        server.script(
            GENERATE, api.generate(api.function_call("search_knowledge", {"query": "q"}, id="fc-7")), api.generate()
        )
        async with chat(server) as llm:
            first = await llm.complete([Message.user("q")], tools=[SEARCH])
            assert first.tool_calls[0].id == "fc-7"
            failed = Message("user", (ToolResultBlock("fc-7", "index offline", is_error=True),))
            await llm.complete([Message.user("q"), first.as_message(), failed], tools=[SEARCH])
    parts = server.requests[1].json["contents"]
    assert parts[1]["parts"][0]["functionCall"]["id"] == "fc-7"
    assert parts[2]["parts"][0]["functionResponse"] == {
        "id": "fc-7",
        "name": "search_knowledge",
        "response": {"error": "index offline"},
    }


async def test_a_tool_result_without_its_call_is_invalid_content() -> None:
    async with ScriptedServer() as server, chat(server) as llm:
        with pytest.raises(InvalidContent, match="tool name"):
            await llm.complete([Message("user", (ToolResultBlock("nowhere", "x"),))])
    assert server.requests == []


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("MALFORMED_FUNCTION_CALL", "other"),
    ],
)
async def test_finish_reasons_are_mapped(finish: str, expected: str) -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.generate(finish_reason=finish))
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.stop_reason == expected


async def test_a_blocked_prompt_is_a_refusal() -> None:
    async with ScriptedServer() as server:
        server.script(
            GENERATE,
            Reply(body={"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 4}}),
        )
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.stop_reason == "refusal"
    assert reply.content == ()


async def test_429_with_retry_info_is_honoured() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.rate_limited("0.2s"), api.generate())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    first, second = server.requests
    assert second.at - first.at >= 0.19


async def test_429_with_a_plain_retry_after_header_is_honoured() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.rate_limited_retry_after("0.2"), api.generate())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    first, second = server.requests
    # FAST_RETRY's own backoff is at most 5 ms: a 0.2 s gap can only come from the header
    assert 0.19 <= second.at - first.at < 2.0


async def test_a_long_plain_retry_after_header_is_raised_at_once() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.rate_limited_retry_after("37"))
        async with chat(server) as llm:
            with pytest.raises(RateLimited) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.retry_after == 37
    assert len(server.requests) == 1


async def test_a_long_retry_delay_is_raised_at_once() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.rate_limited("37s"))
        async with chat(server) as llm:
            with pytest.raises(RateLimited) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.retry_after == 37
    assert len(server.requests) == 1


async def test_5xx_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.UNAVAILABLE, api.INTERNAL, api.generate())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    assert len(server.requests) == 3


async def test_input_token_count_error_is_context_overflow_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.INPUT_TOO_LONG)
        async with chat(server) as llm:
            with pytest.raises(ContextOverflow) as caught:
                await llm.complete([Message.user("hi")])
    assert (caught.value.prompt_tokens, caught.value.limit) == (1200293, 1048576)
    assert len(server.requests) == 1


async def test_invalid_api_key_is_authentication_failed_though_gemini_says_400() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.API_KEY_INVALID)
        async with chat(server) as llm:
            with pytest.raises(AuthenticationFailed) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)
    assert caught.value.status_code == 400
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply", [api.INVALID_ARGUMENT, api.MAX_OUTPUT_TOO_LARGE, api.NOT_FOUND], ids=["invalid", "max-output", "not-found"]
)
async def test_other_4xx_is_bad_request_not_retried(reply: Reply) -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, reply)
        async with chat(server) as llm:
            with pytest.raises(BadRequest) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


async def test_timeout_is_unavailable() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.generate().delayed(5))
        async with chat(server, retry=NO_RETRY, timeout=0.3) as llm:
            with pytest.raises(ProviderUnavailable):
                await llm.complete([Message.user("hi")])


async def test_timeout_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(GENERATE, api.generate().delayed(5), api.generate())
        async with chat(server, timeout=0.3) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"


async def test_stream_yields_text_then_the_complete_response() -> None:
    async with ScriptedServer() as server:
        server.script(STREAM, api.stream(["思い", "出"], calls=[api.function_call("search_knowledge", {"query": "x"})]))
        async with chat(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")], tools=[SEARCH])]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["思い", "出"]
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.response.content[0] == TextBlock("思い出")
    assert isinstance(done.response.content[1], ToolUseBlock)
    assert done.response.stop_reason == "tool_use"
    assert done.response.usage.input_tokens == 14
    assert server.requests[0].query == {"alt": "sse"}


async def test_stream_retries_before_the_first_event() -> None:
    async with ScriptedServer() as server:
        server.script(STREAM, api.UNAVAILABLE, api.stream(["ok"]))
        async with chat(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")])]
    assert isinstance(events[-1], StreamDone)
    assert events[-1].response.text == "ok"
    assert len(server.requests) == 2


async def test_stream_overflow_is_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(STREAM, api.INPUT_TOO_LONG)
        async with chat(server) as llm:
            with pytest.raises(ContextOverflow):
                _ = [e async for e in llm.stream([Message.user("hi")])]
    assert len(server.requests) == 1


# ----------------------------------------------------------------------- embeddings


async def test_embeddings_use_retrieval_task_types_and_dimensionality() -> None:
    async with ScriptedServer() as server:
        server.script(EMBED, api.embeddings([[3, 4, 0], [0, 0, 5]]), api.embeddings([[0, 2, 0]]))
        async with embedder(server) as emb:
            docs = await emb.embed_documents(["今日は晴れ", "明日は雨"])
            query = await emb.embed_query("天気は？")
    assert emb.model_id == "gemini:gemini-embedding-001@3"
    np.testing.assert_allclose(docs[0], [0.6, 0.8, 0], rtol=1e-6)
    np.testing.assert_allclose(docs[1], [0, 0, 1])
    np.testing.assert_allclose(query, [0, 1, 0])
    assert all(v.dtype == np.float32 for v in [*docs, query])
    doc_requests = server.requests[0].json["requests"]
    assert [r["taskType"] for r in doc_requests] == ["RETRIEVAL_DOCUMENT"] * 2
    assert {r["outputDimensionality"] for r in doc_requests} == {3}
    assert doc_requests[0]["content"]["parts"] == [{"text": "今日は晴れ"}]
    assert server.requests[1].json["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


async def test_embeddings_are_batched() -> None:
    async with ScriptedServer() as server:
        server.script(EMBED, api.embeddings([[1, 0, 0]] * 2), api.embeddings([[0, 1, 0]]))
        async with embedder(server, max_batch=2) as emb:
            vectors = await emb.embed_documents(["a", "b", "c"])
    assert len(vectors) == 3
    assert [len(r.json["requests"]) for r in server.requests] == [2, 1]


async def test_embedding_dimension_mismatch_is_an_error() -> None:
    async with ScriptedServer() as server:
        server.script(EMBED, api.embeddings([[1, 0]]))
        async with embedder(server, dimensions=3) as emb:
            with pytest.raises(BadRequest, match="2-dimensional embeddings but 3 are configured"):
                await emb.embed_query("q")


async def test_embedding_errors_are_retried_then_raised() -> None:
    async with ScriptedServer() as server:
        server.script(EMBED, api.rate_limited("0s"), api.API_KEY_INVALID)
        async with embedder(server) as emb:
            with pytest.raises(AuthenticationFailed):
                await emb.embed_documents(["a"])
    assert len(server.requests) == 2


async def test_connection_refused_is_unavailable_and_retried() -> None:
    async with GeminiChatModel(MODEL, api_key="k", base_url=closed_port_url(), retry=FAST_RETRY) as llm:
        with pytest.raises(ProviderUnavailable, match="connection failed"):
            await llm.complete([Message.user("hi")])


async def test_count_tokens_counts_the_system_prompt_as_a_turn() -> None:
    async with ScriptedServer() as server:
        server.script(api.count_tokens_path(MODEL), api.count_tokens(31))
        async with chat(server) as llm:
            assert await llm.count_tokens([Message.user("こんにちは")], system="be brief") == 31
    contents = server.requests[0].json["contents"]
    assert [c["parts"][0]["text"] for c in contents] == ["be brief", "こんにちは"]


async def test_fetch_limits_reads_the_model_endpoint() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.model_path(MODEL), api.model_info(MODEL, input_limit=1_048_576, output_limit=65_536), method="GET"
        )
        async with chat(server) as llm:
            limits = await llm.fetch_limits()
    assert (limits.context_window, limits.max_output_tokens) == (1_048_576, 65_536)
