"""Shared helpers for the long-term memory tests: conversations, fakes, exactly-once checks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from omoide import Memory, Message
from omoide.errors import ProviderError
from omoide.models import SessionKey, utcnow
from omoide.providers.local.hashing import HashingEmbedder
from omoide.settings import Settings

LATER = timedelta(hours=2)  # past the default idle threshold of 1 h


def tuned(settings: Settings, **overrides: Any) -> Settings:
    """``settings`` with some values changed (validated)."""
    return Settings(**{**settings.model_dump(), **overrides})


def later():
    return utcnow() + LATER


async def talk(mem: Memory, key: SessionKey | str, n: int, *, start: int = 0, user: str = "u1") -> list[Message]:
    """Append ``n`` alternating user/assistant turns that pass the archive filters; return them stored."""
    out = []
    for i in range(start, start + n):
        if i % 2 == 0:
            m = Message.user(
                f"{user} のメッセージ {i}: 今日は天気がいいので散歩に行きます。",
                author_id=user,
                author_name=f"name-{user}",
                message_id=f"{user}-{i}",
            )
        else:
            m = Message.assistant(f"返事 {i}: いいですね、楽しんでください。", author_id="bot", author_name="omoide")
        out.append(await mem.append(key, m))
    return out


async def all_sources(store: Any) -> list[Any]:
    out, offset = [], 0
    while True:
        page = await store.knowledge.list_sources(limit=500, offset=offset)
        out.extend(page)
        if len(page) < 500:
            return out
        offset += 500


async def archived_ids(store: Any, session_id: int | None = None) -> list[int]:
    """The multiset of message ids in long-term memory (per source: the union of its chunks'
    message ids), checking each source's chunks against its metadata on the way."""
    out: list[int] = []
    for source in await all_sources(store):
        if session_id is not None and source.metadata.get("origin_session_id") != session_id:
            continue
        ids: set[int] = set()
        for chunk in await store.knowledge.chunks_of_source(source.id):
            ids.update(chunk.location["message_ids"])
        assert len(ids) == source.metadata["message_count"], source
        out.extend(sorted(ids))
    return out


class FlakyEmbedder:
    """The hashing embedder, failing on purpose: ``failures`` is a list of exceptions raised by the
    next calls (one per call), and any text containing ``poison`` raises ``poison_error``."""

    max_batch = 1024

    def __init__(
        self,
        dimensions: int = 64,
        *,
        failures: Sequence[ProviderError] = (),
        poison: str | None = None,
        poison_error: ProviderError | None = None,
    ) -> None:
        self._inner = HashingEmbedder(dimensions)
        self.dimensions = dimensions
        self.model_id = f"flaky@{dimensions}"
        self.failures = list(failures)
        self.poison = poison
        self.poison_error = poison_error
        self.calls: list[int] = []

    async def embed_documents(self, texts: Sequence[str]) -> list[Any]:
        self.calls.append(len(texts))
        if self.failures:
            raise self.failures.pop(0)
        if self.poison and any(self.poison in t for t in texts):
            assert self.poison_error is not None
            raise self.poison_error
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Any:
        return await self._inner.embed_query(text)
