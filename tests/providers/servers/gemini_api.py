"""Gemini API wire format (generateContent, streamGenerateContent?alt=sse, batchEmbedContents)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .scripted import SSE, Reply

API_VERSION = "v1"  # the version google-genai uses by default


def generate_path(model: str) -> str:
    return f"/{API_VERSION}/models/{model}:generateContent"


def stream_path(model: str) -> str:
    return f"/{API_VERSION}/models/{model}:streamGenerateContent"


def embed_path(model: str) -> str:
    return f"/{API_VERSION}/models/{model}:batchEmbedContents"


def function_call(
    name: str, args: Mapping[str, Any], *, id: str | None = None, signature: str | None = None
) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": dict(args)}}
    if id is not None:
        part["functionCall"]["id"] = id
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _response(
    parts: Sequence[dict[str, Any]], finish_reason: str | None, usage: tuple[int, int, int] | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"}
    if usage is not None:
        prompt, candidates, thoughts = usage
        body["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts,
        }
    return body


def generate(*parts: dict[str, Any], finish_reason: str = "STOP", usage: tuple[int, int, int] = (14, 6, 3)) -> Reply:
    return Reply(body=_response(parts or ({"text": "Hello!"},), finish_reason, usage))


def stream(text_chunks: Sequence[str], *, calls: Sequence[dict[str, Any]] = (), finish_reason: str = "STOP") -> Reply:
    events = [SSE(_response([{"text": chunk}], None, None)) for chunk in text_chunks]
    events.append(SSE(_response(list(calls), finish_reason, (14, len(text_chunks), 0))))
    return Reply(events=events)


def embeddings(vectors: Sequence[Sequence[float]]) -> Reply:
    return Reply(body={"embeddings": [{"values": list(v)} for v in vectors]})


def error(
    status: int,
    grpc_status: str,
    message: str,
    *,
    details: Sequence[Mapping[str, Any]] = (),
    headers: Mapping[str, str] | None = None,
) -> Reply:
    body: dict[str, Any] = {"error": {"code": status, "message": message, "status": grpc_status}}
    if details:
        body["error"]["details"] = [dict(d) for d in details]
    return Reply(status=status, body=body, headers=dict(headers or {}))


INPUT_TOO_LONG = error(
    400, "INVALID_ARGUMENT", "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
)
API_KEY_INVALID = error(
    400,
    "INVALID_ARGUMENT",
    "API key not valid. Please pass a valid API key.",
    details=[
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key not valid. Please pass a valid API key.",
        },
    ],
)
INVALID_ARGUMENT = error(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
# says "token" and "exceeds" but is not the overflow message
MAX_OUTPUT_TOO_LARGE = error(
    400,
    "INVALID_ARGUMENT",
    "Unable to submit request because it has a maxOutputTokens value of 100000 but the supported range is from 1 "
    "(inclusive) to 65537 (exclusive). Update the value and try again.",
)
UNAVAILABLE = error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
INTERNAL = error(
    500,
    "INTERNAL",
    "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
)
NOT_FOUND = error(
    404, "NOT_FOUND", "models/gemini-nope is not found for API version v1, or is not supported for generateContent."
)


def rate_limited(retry_delay: str) -> Reply:
    return error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ],
    )


def rate_limited_retry_after(retry_after: str) -> Reply:
    """A 429 whose only hint is the HTTP ``Retry-After`` header (no ``RetryInfo`` detail),
    as a proxy or gateway in front of the API may send it."""
    return error(
        429,
        "RESOURCE_EXHAUSTED",
        "Resource has been exhausted (e.g. check quota).",
        headers={"retry-after": retry_after},
    )


def count_tokens_path(model: str) -> str:
    return f"/{API_VERSION}/models/{model}:countTokens"


def model_path(model: str) -> str:
    return f"/{API_VERSION}/models/{model}"


def count_tokens(total: int) -> Reply:
    return Reply(body={"totalTokens": total})


def model_info(model: str, *, input_limit: int, output_limit: int) -> Reply:
    return Reply(
        body={
            "name": f"models/{model}",
            "version": "001",
            "displayName": "Gemini 2.5 Flash",
            "inputTokenLimit": input_limit,
            "outputTokenLimit": output_limit,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }
    )
