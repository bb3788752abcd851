"""OpenAI / OpenAI-compatible chat and embeddings: the real ``openai`` SDK against a local server."""

from __future__ import annotations

import time

import numpy as np
import pytest

from omoide.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextOverflow,
    InvalidInput,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers import RetryPolicy, StreamDone, TextDelta, ToolSpec
from omoide.providers.openai import OpenAIChatModel, OpenAIEmbedder

from .servers import FAST_RETRY, NO_RETRY, Reply, ScriptedServer, closed_port_url
from .servers import openai_api as api

LOOKUP = ToolSpec(
    name="lookup_memory",
    description="Search the user's memories.",
    input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def chat(
    server: ScriptedServer,
    *,
    provider: str = "openai",
    retry: RetryPolicy = FAST_RETRY,
    timeout: float = 5.0,
    model: str = "gpt-4o-mini",
) -> OpenAIChatModel:
    return OpenAIChatModel(
        model, api_key="sk-test", base_url=server.url + "/v1", provider=provider, timeout=timeout, retry=retry
    )


def embedder(server: ScriptedServer, *, dimensions: int = 4, send: bool = True, max_batch: int = 256) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "text-embedding-3-small",
        dimensions=dimensions,
        send_dimensions=send,
        api_key="sk-test",
        base_url=server.url + "/v1",
        retry=FAST_RETRY,
        max_batch=max_batch,
    )


# ----------------------------------------------------------------------------- chat


async def test_complete_sends_chat_completions_and_maps_the_answer() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion("やあ", prompt_tokens=30, completion_tokens=4))
        async with chat(server) as llm:
            reply = await llm.complete(
                [Message.user("hi"), Message.assistant("hello"), Message.user("元気？")],
                system="be brief",
                max_tokens=2048,
                temperature=0.3,
                top_p=0.9,
            )
    assert reply.text == "やあ"
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (30, 4)
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer sk-test"
    sent = request.json
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "元気？"},
    ]
    assert sent["max_completion_tokens"] == 2048
    assert "max_tokens" not in sent
    assert (sent["temperature"], sent["top_p"]) == (0.3, 0.9)


async def test_compatible_servers_get_max_tokens() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion())
        async with chat(server, provider="openai-compatible", model="llama3") as llm:
            await llm.complete([Message.user("hi")], max_tokens=300)
    sent = server.requests[0].json
    assert sent["max_tokens"] == 300
    assert "max_completion_tokens" not in sent


async def test_tool_calls_round_trip_in_openai_format() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.CHAT_PATH,
            api.completion(
                None,
                tool_calls=[api.tool_call("call_abc", "lookup_memory", {"query": "誕生日"})],
                finish_reason="tool_calls",
            ),
            api.completion("3月15日です。"),
        )
        async with chat(server) as llm:
            history = [Message.user("私の誕生日は？")]
            first = await llm.complete(history, tools=[LOOKUP])
            assert first.stop_reason == "tool_use"
            assert first.content == (ToolUseBlock("call_abc", "lookup_memory", {"query": "誕生日"}),)
            history += [
                first.as_message(),
                Message("user", (ToolResultBlock("call_abc", "誕生日は3月15日"), TextBlock("thanks"))),
            ]
            second = await llm.complete(history, tools=[LOOKUP])
    assert second.text == "3月15日です。"
    assert server.requests[0].json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup_memory",
                "description": "Search the user's memories.",
                "parameters": dict(LOOKUP.input_schema),
            },
        }
    ]
    replay = server.requests[1].json["messages"]
    assert replay[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "lookup_memory", "arguments": '{"query": "誕生日"}'},
            }
        ],
    }
    assert replay[2] == {"role": "tool", "tool_call_id": "call_abc", "content": "誕生日は3月15日"}
    assert replay[3] == {"role": "user", "content": "thanks"}


async def test_tool_error_results_are_marked() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion())
        async with chat(server) as llm:
            call = Message("assistant", (ToolUseBlock("c1", "lookup_memory", {}),))
            result = Message("user", (ToolResultBlock("c1", "no index", is_error=True),))
            await llm.complete([Message.user("q"), call, result])
    assert server.requests[0].json["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "ERROR: no index",
    }


async def test_tool_arguments_that_are_not_json_are_a_provider_error() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.CHAT_PATH,
            api.completion(
                None, tool_calls=[api.tool_call("c1", "lookup_memory", "{not json")], finish_reason="tool_calls"
            ),
        )
        async with chat(server) as llm:
            with pytest.raises(ProviderError, match="not JSON"):
                await llm.complete([Message.user("q")], tools=[LOOKUP])


@pytest.mark.parametrize(
    ("finish", "expected"), [("length", "max_tokens"), ("content_filter", "refusal"), ("weird", "other")]
)
async def test_finish_reasons_are_mapped(finish: str, expected: str) -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion(finish_reason=finish))
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.stop_reason == expected


async def test_a_refusal_is_reported_as_such() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion(None, refusal="I can't help with that."))
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.stop_reason == "refusal"
    assert reply.text == "I can't help with that."


async def test_429_with_retry_after_ms_is_honoured() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.rate_limited(retry_after_ms="200"), api.completion())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    first, second = server.requests
    assert second.at - first.at >= 0.19


async def test_429_with_a_plain_retry_after_is_honoured() -> None:
    """Only the standard header (seconds, fractional): no retry-after-ms beside it."""
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.rate_limited(retry_after="0.2"), api.completion())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    first, second = server.requests
    # FAST_RETRY's own backoff is at most 5 ms: a 0.2 s gap can only come from the hint
    assert 0.19 <= second.at - first.at < 2.0


async def test_429_with_a_plain_retry_after_is_honoured_by_embeddings() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.rate_limited(retry_after="0.2"), api.embeddings([[0, 1, 0, 0]]))
        async with embedder(server) as emb:
            vector = await emb.embed_query("q")
    np.testing.assert_allclose(vector, [0, 1, 0, 0])
    first, second = server.requests
    assert 0.19 <= second.at - first.at < 2.0


async def test_a_long_plain_retry_after_is_raised_at_once() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.rate_limited(retry_after="37"))
        async with chat(server) as llm:
            with pytest.raises(RateLimited) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.retry_after == 37
    assert len(server.requests) == 1


async def test_429_without_a_hint_backs_off_and_gives_up_as_rate_limited() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, *[api.rate_limited()] * 4)
        async with chat(server) as llm:
            with pytest.raises(RateLimited) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.retry_after is None
    assert len(server.requests) == 4


async def test_5xx_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.SERVER_ERROR, Reply(status=502, body="Bad Gateway"), api.completion())
        async with chat(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    assert len(server.requests) == 3


async def test_context_length_exceeded_is_context_overflow_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.CONTEXT_LENGTH_EXCEEDED)
        async with chat(server) as llm:
            with pytest.raises(ContextOverflow) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.status_code == 400
    assert len(server.requests) == 1


async def test_vllm_typed_input_tokens_error_is_context_overflow() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.VLLM_INPUT_TOO_LONG)
        async with chat(server, provider="openai-compatible", model="qwen") as llm:
            with pytest.raises(ContextOverflow):
                await llm.complete([Message.user("hi")])


async def test_untyped_overflow_text_is_not_guessed() -> None:
    # an old vLLM says "maximum context length ... tokens" with no code: we do not parse prose
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.VLLM_OLD_TOO_LONG)
        async with chat(server, provider="openai-compatible", model="qwen") as llm:
            with pytest.raises(BadRequest) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)


@pytest.mark.parametrize("reply", [api.INVALID_API_KEY, api.INVALID_TOKEN], ids=["invalid-key", "token-wording"])
async def test_bad_key_is_authentication_failed_never_overflow_never_retried(reply: Reply) -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, reply)
        async with chat(server) as llm:
            with pytest.raises(AuthenticationFailed) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [api.MAX_TOKENS_TOO_LARGE, api.NOT_FOUND], ids=["max-tokens", "not-found"])
async def test_other_4xx_is_bad_request_not_retried(reply: Reply) -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, reply)
        async with chat(server) as llm:
            with pytest.raises(BadRequest) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)
    assert len(server.requests) == 1


async def test_timeout_is_unavailable_and_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion().delayed(5), api.completion("late but fine"))
        async with chat(server, timeout=0.3) as llm:
            start = time.monotonic()
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "late but fine"
    assert time.monotonic() - start < 3


async def test_timeout_without_retries_raises() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.completion().delayed(5))
        async with chat(server, retry=NO_RETRY, timeout=0.2) as llm:
            with pytest.raises(ProviderUnavailable):
                await llm.complete([Message.user("hi")])


async def test_connection_refused_is_unavailable() -> None:
    llm = OpenAIChatModel("gpt-4o-mini", api_key="k", base_url=closed_port_url() + "/v1", retry=FAST_RETRY)
    async with llm:
        with pytest.raises(ProviderUnavailable):
            await llm.complete([Message.user("hi")])


async def test_stream_yields_deltas_and_accumulates_tool_calls_and_usage() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.CHAT_PATH,
            api.stream(
                ["思い", "出"], tool_call=("call_1", "lookup_memory", {"query": "andy"}), finish_reason="tool_calls"
            ),
        )
        async with chat(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")], tools=[LOOKUP])]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["思い", "出"]
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.response.content == (TextBlock("思い出"), ToolUseBlock("call_1", "lookup_memory", {"query": "andy"}))
    assert done.response.stop_reason == "tool_use"
    assert (done.response.usage.input_tokens, done.response.usage.output_tokens) == (9, 4)
    sent = server.requests[0].json
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


async def test_compatible_stream_does_not_ask_for_usage() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.stream(["ok"], usage=None))
        async with chat(server, provider="openai-compatible", model="llama3") as llm:
            events = [e async for e in llm.stream([Message.user("hi")])]
    assert "stream_options" not in server.requests[0].json
    assert isinstance(events[-1], StreamDone)
    assert events[-1].response.usage.input_tokens == 0


async def test_stream_retries_before_the_first_event_only() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.rate_limited(retry_after_ms="1"), api.SERVER_ERROR, api.stream(["ok"]))
        async with chat(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")])]
    assert isinstance(events[-1], StreamDone)
    assert len(server.requests) == 3


async def test_stream_overflow_is_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.CONTEXT_LENGTH_EXCEEDED)
        async with chat(server) as llm:
            with pytest.raises(ContextOverflow):
                _ = [e async for e in llm.stream([Message.user("hi")])]
    assert len(server.requests) == 1


async def test_error_inside_a_stream_is_raised_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.CHAT_PATH, api.stream(["partial"], error={"message": "server overloaded", "type": "server_error"})
        )
        async with chat(server) as llm:
            with pytest.raises(ProviderError):
                _ = [e async for e in llm.stream([Message.user("hi")])]
    assert len(server.requests) == 1


async def test_breaking_out_of_a_stream_closes_it() -> None:
    async with ScriptedServer() as server:
        server.script(api.CHAT_PATH, api.stream(["a", "b", "c"]))
        async with chat(server) as llm:
            stream = llm.stream([Message.user("hi")])
            async for event in stream:
                assert isinstance(event, TextDelta)
                break
            await stream.aclose()  # type: ignore[attr-defined]


# ----------------------------------------------------------------------- embeddings


async def test_embeddings_are_normalised_float32_in_input_order() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.embeddings([[3, 4, 0, 0], [0, 0, 0, 2]], shuffle=True))
        async with embedder(server) as emb:
            vectors = await emb.embed_documents(["a", "b"])
    assert emb.model_id == "openai:text-embedding-3-small@4"
    assert all(v.dtype == np.float32 for v in vectors)
    # the server listed index 1 first: ``index`` decides the order
    np.testing.assert_allclose(vectors[0], [0.6, 0.8, 0, 0], rtol=1e-6)
    np.testing.assert_allclose(vectors[1], [0, 0, 0, 1])
    sent = server.requests[0].json
    assert sent == {"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float", "dimensions": 4}


async def test_embeddings_are_batched_by_max_batch() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.EMBEDDINGS_PATH,
            api.embeddings([[1, 0, 0, 0]] * 2),
            api.embeddings([[0, 1, 0, 0]] * 2),
            api.embeddings([[0, 0, 1, 0]]),
        )
        async with embedder(server, max_batch=2) as emb:
            vectors = await emb.embed_documents(["a", "b", "c", "d", "e"])
    assert [len(r.json["input"]) for r in server.requests] == [2, 2, 1]
    assert len(vectors) == 5
    np.testing.assert_allclose(vectors[4], [0, 0, 1, 0])


async def test_dimensions_are_sent_only_when_asked() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.embeddings([[1, 0, 0, 0]]))
        async with embedder(server, send=False) as emb:
            await emb.embed_query("q")
    assert "dimensions" not in server.requests[0].json


async def test_a_dimension_mismatch_names_both_numbers() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.embeddings([[1, 0, 0]]))
        async with embedder(server, dimensions=4) as emb:
            with pytest.raises(BadRequest, match=r"returned 3-dimensional embeddings but 4 are configured"):
                await emb.embed_query("q")


async def test_embedding_errors_are_mapped_and_retried() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.EMBEDDINGS_PATH, api.rate_limited(retry_after_ms="1"), api.SERVER_ERROR, api.embeddings([[0, 1, 0, 0]])
        )
        async with embedder(server) as emb:
            vector = await emb.embed_query("q")
    np.testing.assert_allclose(vector, [0, 1, 0, 0])
    assert len(server.requests) == 3


async def test_embedding_bad_key_is_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.EMBEDDINGS_PATH, api.INVALID_API_KEY)
        async with embedder(server) as emb:
            with pytest.raises(AuthenticationFailed):
                await emb.embed_documents(["a"])
    assert len(server.requests) == 1


async def test_embedding_input_must_be_a_list_of_strings() -> None:
    async with ScriptedServer() as server, embedder(server) as emb:
        with pytest.raises(InvalidInput):
            await emb.embed_documents("one string")  # type: ignore[arg-type]
    assert server.requests == []


async def test_empty_input_makes_no_request() -> None:
    async with ScriptedServer() as server, embedder(server) as emb:
        assert await emb.embed_documents([]) == []
    assert server.requests == []
