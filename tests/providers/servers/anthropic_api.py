"""Anthropic Messages API wire format (https://docs.anthropic.com/en/api/messages)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .scripted import SSE, Reply

PATH = "/v1/messages"


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(id: str, name: str, input: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": dict(input)}


def message(
    *blocks: dict[str, Any],
    stop_reason: str = "end_turn",
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 12,
    output_tokens: int = 7,
    cache_read_input_tokens: int = 0,
) -> Reply:
    """A 200 reply with one Message object."""
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks) or [text_block("Hello!")],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cache_read_input_tokens,
        },
    }
    return Reply(body=body, headers={"request-id": "req_011CTest"})


def stream(
    text_chunks: Sequence[str],
    *,
    tool_use: tuple[str, str, Mapping[str, Any]] | None = None,
    stop_reason: str = "end_turn",
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 25,
    output_tokens: int = 15,
    error: Mapping[str, Any] | None = None,
    event_delay: float = 0.0,
) -> Reply:
    """A 200 ``text/event-stream`` reply with the Messages streaming events.

    ``error`` inserts an ``error`` event after the text (the API's mid-stream failure).
    """
    events = [
        SSE(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stream",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": input_tokens, "output_tokens": 1},
                },
            },
            "message_start",
        ),
        SSE(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
        SSE({"type": "ping"}, "ping"),
    ]
    for chunk in text_chunks:
        events.append(
            SSE(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}},
                "content_block_delta",
            )
        )
    if error is not None:
        events.append(SSE({"type": "error", "error": dict(error)}, "error"))
        return Reply(events=events, event_delay=event_delay)
    events.append(SSE({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    if tool_use is not None:
        call_id, name, arguments = tool_use
        raw = json.dumps(dict(arguments))
        half = len(raw) // 2
        events += [
            SSE(
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
                "content_block_start",
            ),
            SSE(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": raw[:half]},
                },
                "content_block_delta",
            ),
            SSE(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": raw[half:]},
                },
                "content_block_delta",
            ),
            SSE({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        ]
    events += [
        SSE(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
            "message_delta",
        ),
        SSE({"type": "message_stop"}, "message_stop"),
    ]
    return Reply(events=events, event_delay=event_delay)


def error(status: int, error_type: str, message: str, *, headers: Mapping[str, str] | None = None) -> Reply:
    """An error reply in the API's shape: ``{"type": "error", "error": {"type", "message"}}``."""
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_011CErr"}
    return Reply(status=status, body=body, headers=dict(headers or {}))


# The bodies the API actually returns (see docs/providers.md for sources).
PROMPT_TOO_LONG = error(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")
INPUT_PLUS_MAX_TOKENS = error(
    400,
    "invalid_request_error",
    "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, "
    "decrease input length or `max_tokens` and try again",
)
REQUEST_TOO_LARGE = error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes.")
INVALID_API_KEY = error(401, "authentication_error", "invalid x-api-key")
# a 401 whose message talks about a "token" and "too long": seed 002 took such errors for overflows
INVALID_TOKEN = error(401, "authentication_error", "Invalid bearer token: the token is too long or malformed")
OVERLOADED = error(529, "overloaded_error", "Overloaded")
API_ERROR = error(500, "api_error", "Internal server error")
BAD_MAX_TOKENS = error(
    400,
    "invalid_request_error",
    "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5",
)
NOT_FOUND = error(404, "not_found_error", "model: claude-nope")


def rate_limited(retry_after: str) -> Reply:
    return error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50,000 input tokens per minute.",
        headers={"retry-after": retry_after},
    )


COUNT_TOKENS_PATH = "/v1/messages/count_tokens"


def count_tokens(input_tokens: int) -> Reply:
    return Reply(body={"input_tokens": input_tokens})


def model_info(model_id: str, *, max_input_tokens: int | None, max_tokens: int | None) -> Reply:
    body = {
        "id": model_id,
        "type": "model",
        "display_name": "Claude Sonnet 4.6",
        "created_at": "2026-02-17T00:00:00Z",
        "lifecycle": "active",
        "max_input_tokens": max_input_tokens,
        "max_tokens": max_tokens,
    }
    return Reply(body=body)
