"""Cohere ``/v2/rerank`` wire format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .scripted import Reply

RERANK_PATH = "/v2/rerank"


def rerank(scores: Sequence[tuple[int, float]]) -> Reply:
    """Results as (document index, relevance score), in the order given."""
    return Reply(
        body={
            "id": "07734bd2-2473-4f07-94e1-0d9f0e6843cf",
            "results": [{"index": i, "relevance_score": s} for i, s in scores],
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
        }
    )


def error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(status=status, body={"message": message}, headers=dict(headers or {}))


INVALID_API_TOKEN = error(401, "invalid api token")
INVALID_TOKEN_498 = error(498, "invalid api token")
BAD_REQUEST = error(400, "invalid request: query must be a non-empty string")
SERVER_ERROR = error(500, "internal server error, this has been reported to our developers")
SERVICE_UNAVAILABLE = error(503, "service unavailable")


def rate_limited(retry_after: str) -> Reply:
    return error(
        429,
        "You are using a Trial key, which is limited to 10 API calls / minute.",
        headers={"retry-after": retry_after},
    )
