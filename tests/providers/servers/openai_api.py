"""OpenAI Chat Completions and Embeddings wire format (also spoken by Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .scripted import SSE, Reply

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"


def tool_call(id: str, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return {"id": id, "type": "function", "function": {"name": name, "arguments": raw}}


def completion(
    content: str | None = "Hello!",
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    finish_reason: str = "stop",
    model: str = "gpt-4o-mini-2024-07-18",
    prompt_tokens: int = 11,
    completion_tokens: int = 6,
    refusal: str | None = None,
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    body = {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "fp_test",
    }
    return Reply(body=body, headers={"x-request-id": "req_test"})


def _chunk(delta: dict[str, Any], finish_reason: str | None = None, model: str = "gpt-4o-mini") -> dict[str, Any]:
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def stream(
    text_chunks: Sequence[str],
    *,
    tool_call: tuple[str, str, Mapping[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (9, 4),
    error: Mapping[str, Any] | None = None,
    event_delay: float = 0.0,
) -> Reply:
    """A streamed completion: role chunk, text chunks, tool-call chunks, finish, usage, ``[DONE]``."""
    events = [SSE(_chunk({"role": "assistant", "content": "", "refusal": None}))]
    events += [SSE(_chunk({"content": chunk})) for chunk in text_chunks]
    if error is not None:
        events.append(SSE({"error": dict(error)}))
        return Reply(events=events, event_delay=event_delay)
    if tool_call is not None:
        call_id, name, arguments = tool_call
        raw = json.dumps(dict(arguments))
        half = len(raw) // 2
        events += [
            SSE(
                _chunk(
                    {
                        "tool_calls": [
                            {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                        ]
                    }
                )
            ),
            SSE(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[:half]}}]})),
            SSE(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[half:]}}]})),
        ]
    events.append(SSE(_chunk({}, finish_reason)))
    if usage is not None:
        events.append(
            SSE(
                {
                    "id": "chatcmpl-stream",
                    "object": "chat.completion.chunk",
                    "created": 1741569952,
                    "model": "gpt-4o-mini",
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
                }
            )
        )
    events.append(SSE("[DONE]"))
    return Reply(events=events, event_delay=event_delay)


def embeddings(
    vectors: Sequence[Sequence[float]], *, model: str = "text-embedding-3-small", shuffle: bool = False
) -> Reply:
    data = [{"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)]
    if shuffle:
        data.reverse()  # the API may return items out of order; ``index`` is authoritative
    return Reply(
        body={"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 8, "total_tokens": 8}}
    )


def error(
    status: int,
    message: str,
    *,
    type: str | None = "invalid_request_error",
    code: str | int | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    body = {"error": {"message": message, "type": type, "param": param, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


CONTEXT_LENGTH_EXCEEDED = error(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
    "Please reduce the length of the messages.",
    code="context_length_exceeded",
    param="messages",
)
INVALID_API_KEY = error(
    401,
    "Incorrect API key provided: sk-bad***. You can find your API key at https://platform.openai.com/account/api-keys.",
    code="invalid_api_key",
)
# mentions "token" and "maximum": a substring matcher would call it an overflow
INVALID_TOKEN = error(401, "Invalid authentication token: the token exceeds the maximum length", code="invalid_api_key")
MAX_TOKENS_TOO_LARGE = error(
    400,
    "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.",
    code="invalid_value",
    param="max_tokens",
)
SERVER_ERROR = error(
    500,
    "The server had an error while processing your request. Sorry about that!",
    type="server_error",
)
NOT_FOUND = error(404, "The model `gpt-nope` does not exist or you do not have access to it.", code="model_not_found")
# vLLM >= 0.16 (typed by ``param``, no code string)
VLLM_INPUT_TOO_LONG = error(
    400,
    "You passed 1015 input tokens and requested 10 output tokens. However, the model's context length is only "
    "1024 tokens, resulting in a maximum input length of 1014 tokens. Please reduce the length of the input prompt. "
    "(parameter=input_tokens, value=1015)",
    type="BadRequestError",
    code=400,
    param="input_tokens",
)
# vLLM < 0.16: no typed signal at all
VLLM_OLD_TOO_LONG = error(
    400,
    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
    "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    type="BadRequestError",
    code=400,
)


def rate_limited(*, retry_after_ms: str | None = None, retry_after: str | None = None) -> Reply:
    headers = {}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return error(
        429,
        "Rate limit reached for gpt-4o-mini in organization org-test on tokens per min (TPM): Limit 200000, "
        "Used 199000, Requested 2000. Please try again in 300ms.",
        type="tokens",
        code="rate_limit_exceeded",
        headers=headers,
    )
