"""AnthropicChatModel: the real ``anthropic`` SDK against a local Messages API server."""

from __future__ import annotations

import time

import pytest

from omoide.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextOverflow,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers import RetryPolicy, StreamDone, TextDelta, ToolSpec
from omoide.providers.anthropic import AnthropicChatModel

from .servers import FAST_RETRY, NO_RETRY, ScriptedServer, closed_port_url
from .servers import anthropic_api as api

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def model(server: ScriptedServer, retry: RetryPolicy = FAST_RETRY, timeout: float = 5.0) -> AnthropicChatModel:
    return AnthropicChatModel(
        "claude-sonnet-4-6", api_key="sk-ant-test", base_url=server.url, timeout=timeout, retry=retry
    )


async def test_complete_sends_the_messages_api_request_and_maps_the_answer() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.message(api.text_block("こんにちは！"), input_tokens=20, cache_read_input_tokens=5))
        async with model(server) as llm:
            reply = await llm.complete(
                [Message.user("hi"), Message.assistant("hello"), Message.user("元気？")],
                system="be brief",
                max_tokens=2048,
                temperature=0.3,
                top_p=0.9,
            )
    assert reply.text == "こんにちは！"
    assert reply.stop_reason == "end_turn"
    assert reply.usage.input_tokens == 25  # input + cache reads
    assert reply.usage.output_tokens == 7
    assert reply.model == "claude-sonnet-4-6"
    [request] = server.requests
    assert "sk-ant-test" in request.headers.get("authorization", "") + request.headers.get("x-api-key", "")
    assert "anthropic-version" in request.headers
    sent = request.json
    assert sent["model"] == "claude-sonnet-4-6"
    assert sent["system"] == "be brief"
    assert sent["max_tokens"] == 2048
    assert "temperature" not in sent  # API 2026-10-21 rejects sampling parameters
    assert "top_p" not in sent
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][2]["content"] == [{"type": "text", "text": "元気？"}]


async def test_tool_calls_round_trip_in_anthropic_format() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.PATH,
            api.message(
                api.text_block("Let me check."),
                api.tool_use_block("toolu_01A", "get_weather", {"city": "Tokyo"}),
                stop_reason="tool_use",
            ),
            api.message(api.text_block("It is sunny in Tokyo.")),
        )
        async with model(server) as llm:
            history = [Message.user("Weather in Tokyo?")]
            first = await llm.complete(history, tools=[WEATHER])
            assert first.stop_reason == "tool_use"
            assert first.tool_calls == (ToolUseBlock("toolu_01A", "get_weather", {"city": "Tokyo"}),)
            history += [first.as_message(), Message("user", (ToolResultBlock("toolu_01A", "sunny, 21°C"),))]
            second = await llm.complete(history, tools=[WEATHER])
    assert second.text == "It is sunny in Tokyo."
    sent = server.requests[0].json
    assert sent["tools"] == [
        {"name": "get_weather", "description": "Current weather in a city.", "input_schema": dict(WEATHER.input_schema)}
    ]
    replay = server.requests[1].json["messages"]
    assert replay[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Tokyo"}},
        ],
    }
    assert replay[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "sunny, 21°C"}],
    }


async def test_consecutive_turns_of_one_role_are_merged() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.message())
        async with model(server) as llm:
            await llm.complete([Message.user("a"), Message.user("b")])
    [only] = server.requests[0].json["messages"]
    assert only == {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}


@pytest.mark.parametrize(
    ("stop", "expected"),
    [("max_tokens", "max_tokens"), ("stop_sequence", "stop_sequence"), ("refusal", "refusal"),
     ("model_context_window_exceeded", "max_tokens"), ("pause_turn", "other")],
)  # fmt: skip
async def test_stop_reasons_are_mapped(stop: str, expected: str) -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.message(stop_reason=stop))
        async with model(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.stop_reason == expected


async def test_429_with_retry_after_is_retried_after_the_hinted_wait() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.rate_limited("0.2"), api.message())
        async with model(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    first, second = server.requests
    assert second.at - first.at >= 0.19  # backoff alone would be ~1 ms: the hint was honoured


async def test_retry_after_longer_than_the_policy_allows_is_raised_at_once() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.rate_limited("30"))
        async with model(server) as llm:
            with pytest.raises(RateLimited) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.retry_after == 30
    assert caught.value.provider == "anthropic"
    assert len(server.requests) == 1


async def test_5xx_then_success() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.OVERLOADED, api.API_ERROR, api.message())
        async with model(server) as llm:
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    assert len(server.requests) == 3  # the SDK's own retries are off: each attempt is ours


async def test_5xx_until_retries_are_used_up() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, *[api.OVERLOADED] * 4)
        async with model(server) as llm:
            with pytest.raises(ProviderUnavailable) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.status_code == 529
    assert len(server.requests) == 4  # 1 + FAST_RETRY.max_retries


@pytest.mark.parametrize(
    ("reply", "prompt_tokens", "limit"),
    [
        (api.PROMPT_TOO_LONG, 208310, 200000),
        (api.INPUT_PLUS_MAX_TOKENS, 188240, 200000),
        (api.REQUEST_TOO_LARGE, None, None),
    ],
    ids=["prompt-too-long", "input-plus-max-tokens", "413-request-too-large"],
)
async def test_context_overflow_is_typed_and_not_retried(
    reply: object, prompt_tokens: int | None, limit: int | None
) -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, reply)  # type: ignore[arg-type]
        async with model(server) as llm:
            with pytest.raises(ContextOverflow) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.prompt_tokens == prompt_tokens
    assert caught.value.limit == limit
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [api.INVALID_API_KEY, api.INVALID_TOKEN], ids=["invalid-key", "token-wording"])
async def test_bad_key_is_authentication_failed_never_overflow_never_retried(reply: object) -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, reply)  # type: ignore[arg-type]
        async with model(server) as llm:
            with pytest.raises(AuthenticationFailed) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)
    assert caught.value.status_code == 401
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [api.BAD_MAX_TOKENS, api.NOT_FOUND], ids=["max-tokens", "not-found"])
async def test_other_4xx_is_bad_request_not_retried(reply: object) -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, reply)  # type: ignore[arg-type]
        async with model(server) as llm:
            with pytest.raises(BadRequest) as caught:
                await llm.complete([Message.user("hi")])
    assert not isinstance(caught.value, ContextOverflow)  # "max_tokens ... tokens" is not an overflow
    assert len(server.requests) == 1


async def test_a_slow_server_times_out_and_the_timeout_is_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.message().delayed(5), api.message())
        async with model(server, timeout=0.3) as llm:
            start = time.monotonic()
            reply = await llm.complete([Message.user("hi")])
    assert reply.text == "Hello!"
    assert 0.25 < time.monotonic() - start < 3
    assert len(server.requests) == 2


async def test_timeout_without_retries_raises_provider_unavailable() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.message().delayed(5))
        async with model(server, retry=NO_RETRY, timeout=0.2) as llm:
            with pytest.raises(ProviderUnavailable):
                await llm.complete([Message.user("hi")])


async def test_connection_refused_is_unavailable_and_retried() -> None:
    llm = AnthropicChatModel("claude-sonnet-4-6", api_key="k", base_url=closed_port_url(), retry=FAST_RETRY)
    async with llm:
        with pytest.raises(ProviderUnavailable):
            await llm.complete([Message.user("hi")])


async def test_stream_yields_text_deltas_then_the_complete_response() -> None:
    async with ScriptedServer() as server:
        server.script(
            api.PATH,
            api.stream(["思い", "出"], tool_use=("toolu_9", "get_weather", {"city": "大阪"}), stop_reason="tool_use"),
        )
        async with model(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")], tools=[WEATHER])]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["思い", "出"]
    done = events[-1]
    assert isinstance(done, StreamDone)
    assert done.response.content == (TextBlock("思い出"), ToolUseBlock("toolu_9", "get_weather", {"city": "大阪"}))
    assert done.response.stop_reason == "tool_use"
    assert done.response.usage.output_tokens == 15
    assert server.requests[0].json["stream"] is True


async def test_stream_is_retried_until_the_first_event() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.rate_limited("0"), api.OVERLOADED, api.stream(["ok"]))
        async with model(server) as llm:
            events = [e async for e in llm.stream([Message.user("hi")])]
    assert isinstance(events[-1], StreamDone)
    assert events[-1].response.text == "ok"
    assert len(server.requests) == 3


async def test_error_event_inside_a_stream_is_mapped_by_its_type() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.stream(["partial"], error={"type": "overloaded_error", "message": "Overloaded"}))
        async with model(server) as llm:
            seen: list[str] = []

            async def consume() -> None:
                async for event in llm.stream([Message.user("hi")]):
                    if isinstance(event, TextDelta):
                        seen.append(event.text)

            with pytest.raises(ProviderUnavailable):
                await consume()
    assert seen == ["partial"]
    assert len(server.requests) == 1  # text was already shown: not retried


async def test_stream_stalling_between_events_times_out() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.stream(["a", "b"], event_delay=5))
        async with model(server, retry=NO_RETRY, timeout=0.3) as llm:
            with pytest.raises(ProviderUnavailable):
                _ = [e async for e in llm.stream([Message.user("hi")])]


async def test_stream_context_overflow_is_not_retried() -> None:
    async with ScriptedServer() as server:
        server.script(api.PATH, api.PROMPT_TOO_LONG)
        async with model(server) as llm:
            with pytest.raises(ContextOverflow):
                _ = [e async for e in llm.stream([Message.user("hi")])]
    assert len(server.requests) == 1


async def test_errors_carry_the_provider_and_chain_the_sdk_exception() -> None:
    import anthropic

    async with ScriptedServer() as server:
        server.script(api.PATH, api.INVALID_API_KEY)
        async with model(server) as llm:
            with pytest.raises(ProviderError) as caught:
                await llm.complete([Message.user("hi")])
    assert caught.value.provider == "anthropic"
    assert isinstance(caught.value.__cause__, anthropic.AuthenticationError)
    assert "sk-ant-test" not in str(caught.value)


async def test_count_tokens_uses_the_token_counting_endpoint() -> None:
    async with ScriptedServer() as server:
        server.script(api.COUNT_TOKENS_PATH, api.OVERLOADED, api.count_tokens(2095))
        async with model(server) as llm:
            count = await llm.count_tokens([Message.user("こんにちは")], system="be brief", tools=[WEATHER])
    assert count == 2095
    sent = server.requests[-1].json
    assert (sent["model"], sent["system"], sent["tools"][0]["name"]) == ("claude-sonnet-4-6", "be brief", "get_weather")


async def test_fetch_limits_reads_the_models_api() -> None:
    async with ScriptedServer() as server:
        server.script(
            "/v1/models/claude-sonnet-4-6",
            api.model_info("claude-sonnet-4-6", max_input_tokens=1_000_000, max_tokens=64_000),
            api.model_info("claude-sonnet-4-6", max_input_tokens=None, max_tokens=None),
            method="GET",
        )
        async with model(server) as llm:
            limits = await llm.fetch_limits()
            with pytest.raises(ProviderError, match="no context window reported"):
                await llm.fetch_limits()
    assert (limits.context_window, limits.max_output_tokens) == (1_000_000, 64_000)
