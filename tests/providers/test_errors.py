"""The SDK → omoide error mappings, on the SDKs' own exception objects.

The per-provider server tests check each mapping end to end; these check the rules as
properties: an authentication error is never a context overflow whatever its message
says, and an overflow is recognised only from the typed signal.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors as genai_errors
from hypothesis import given
from hypothesis import strategies as st

from omoide.errors import AuthenticationFailed, BadRequest, ContextOverflow, ProviderUnavailable, RateLimited
from omoide.providers._errors import (
    map_anthropic_error,
    map_gemini_error,
    map_openai_error,
    retry_after_seconds,
)

# messages that a substring matcher (seed 002) would take for an overflow
TRICKY = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            "invalid token",
            "Invalid API token",
            "token expired: the maximum token lifetime was exceeded",
            "prompt is too long: 208310 tokens > 200000 maximum",
            "This model's maximum context length is 8192 tokens.",
            "The input token count (2) exceeds the maximum number of tokens allowed (1).",
            "context_length_exceeded",
        ]
    ),
)


def _response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers, request=httpx2.Request("POST", "https://api.example/v1/x"))


def anthropic_error(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> Exception:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    classes: dict[int, type[anthropic.APIStatusError]] = {
        400: anthropic.BadRequestError,
        401: anthropic.AuthenticationError,
        413: anthropic.ContentTooLargeError,
        429: anthropic.RateLimitError,
    }
    cls = classes.get(status, anthropic.APIStatusError)
    return cls(f"Error code: {status} - {body}", response=_response(status, headers), body=body)


def openai_error(status: int, message: str, code: str | None, param: str | None = None) -> Exception:
    data = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    classes: dict[int, type[openai.APIStatusError]] = {400: openai.BadRequestError, 401: openai.AuthenticationError}
    return classes.get(status, openai.APIStatusError)(f"Error code: {status}", response=_response(status), body=data)


def gemini_error(status: int, grpc: str, message: str, details: list[dict[str, Any]] | None = None) -> Exception:
    body: dict[str, Any] = {"error": {"code": status, "message": message, "status": grpc}}
    if details:
        body["error"]["details"] = details
    return genai_errors.ClientError(status, body)


@given(message=TRICKY)
def test_authentication_errors_are_never_overflows(message: str) -> None:
    for mapped in (
        map_anthropic_error(anthropic_error(401, "authentication_error", message)),
        map_openai_error(openai_error(401, message, "invalid_api_key")),
        map_gemini_error(
            gemini_error(
                400,
                "INVALID_ARGUMENT",
                message,
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
            )
        ),
    ):
        assert isinstance(mapped, AuthenticationFailed)
        assert not isinstance(mapped, ContextOverflow)


@given(message=st.text(max_size=200))
def test_untyped_400s_are_bad_requests(message: str) -> None:
    assert isinstance(map_openai_error(openai_error(400, message, None)), BadRequest)
    mapped = map_anthropic_error(anthropic_error(400, "invalid_request_error", "x " + message))
    assert isinstance(mapped, BadRequest)
    assert not isinstance(mapped, ContextOverflow)


def test_anthropic_overflow_grammar_must_match_the_whole_message() -> None:
    exact = anthropic_error(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")
    mapped = map_anthropic_error(exact)
    assert isinstance(mapped, ContextOverflow)
    assert (mapped.prompt_tokens, mapped.limit) == (208310, 200000)
    embedded = anthropic_error(
        400, "invalid_request_error", "tool input rejected: prompt is too long: 5 tokens > 4 maximum"
    )
    assert not isinstance(map_anthropic_error(embedded), ContextOverflow)
    wrong_type = anthropic_error(400, "api_error", "prompt is too long: 5 tokens > 4 maximum")
    assert not isinstance(map_anthropic_error(wrong_type), ContextOverflow)


def test_anthropic_mid_stream_error_events_map_by_type() -> None:
    for error_type, expected in [
        ("overloaded_error", ProviderUnavailable),
        ("api_error", ProviderUnavailable),
        ("rate_limit_error", RateLimited),
        ("authentication_error", AuthenticationFailed),
        ("invalid_request_error", BadRequest),
    ]:
        exc = anthropic.APIStatusError(
            "stream error",
            response=_response(200),
            body={"type": "error", "error": {"type": error_type, "message": "m"}},
        )
        assert type(map_anthropic_error(exc)) is expected, error_type


def test_openai_overflow_is_the_code_only() -> None:
    assert isinstance(map_openai_error(openai_error(400, "anything", "context_length_exceeded")), ContextOverflow)
    assert isinstance(map_openai_error(openai_error(400, "anything", None, param="input_tokens")), ContextOverflow)
    assert not isinstance(map_openai_error(openai_error(400, "maximum context length", None)), ContextOverflow)


def test_gemini_overflow_needs_status_and_grammar() -> None:
    text = "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
    mapped = map_gemini_error(gemini_error(400, "INVALID_ARGUMENT", text))
    assert isinstance(mapped, ContextOverflow)
    assert (mapped.prompt_tokens, mapped.limit) == (1200293, 1048576)
    assert isinstance(map_gemini_error(gemini_error(400, "FAILED_PRECONDITION", text)), BadRequest)
    assert isinstance(map_gemini_error(gemini_error(403, "PERMISSION_DENIED", "denied")), AuthenticationFailed)


def test_gemini_retry_info_sets_retry_after() -> None:
    exc = gemini_error(
        429,
        "RESOURCE_EXHAUSTED",
        "quota",
        [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}],
    )
    mapped = map_gemini_error(exc)
    assert isinstance(mapped, RateLimited)
    assert mapped.retry_after == 1.5


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "100", "retry-after": "9"}, 0.1),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-4"}, 0.0),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str] | None, expected: float | None) -> None:
    assert retry_after_seconds(headers) == expected


def test_retry_after_http_date() -> None:
    header = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = retry_after_seconds({"retry-after": header})
    assert seconds is not None
    assert 25 <= seconds <= 31


def test_rate_limit_carries_the_header_hint() -> None:
    mapped = map_anthropic_error(anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "12"}))
    assert isinstance(mapped, RateLimited)
    assert mapped.retry_after == 12
