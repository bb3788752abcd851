"""Voyage AI ``/v1/rerank`` and ``/v1/embeddings`` wire format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .scripted import Reply

RERANK_PATH = "/v1/rerank"
EMBEDDINGS_PATH = "/v1/embeddings"


def rerank(scores: Sequence[tuple[int, float]], *, model: str = "rerank-2") -> Reply:
    return Reply(
        body={
            "object": "list",
            "data": [{"relevance_score": s, "index": i} for i, s in scores],
            "model": model,
            "usage": {"total_tokens": 26},
        }
    )


def embeddings(vectors: Sequence[Sequence[float]], *, model: str = "voyage-3.5") -> Reply:
    return Reply(
        body={
            "object": "list",
            "data": [{"object": "embedding", "embedding": list(v), "index": i} for i, v in enumerate(vectors)],
            "model": model,
            "usage": {"total_tokens": 10},
        }
    )


def error(status: int, detail: str, *, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status=status, body={"detail": detail}, headers=dict(headers or {}))


INVALID_API_KEY = error(401, "Provided API key is invalid.")
BAD_REQUEST = error(400, "Request to model 'rerank-2' failed. The max allowed tokens per submitted batch is 600000.")
SERVER_ERROR = Reply(status=500, body={"detail": "Internal server error"})
SERVICE_UNAVAILABLE = Reply(status=503, body={"detail": "Service unavailable"})


def rate_limited(retry_after: str) -> Reply:
    return error(
        429,
        "You have exceeded the rate limit. Please retry after a short while.",
        headers={"retry-after": retry_after},
    )
