"""An import builds the next source while the last one is written (issue 17 point 4), on both
backends, without changing what a failure leaves behind.

* the next windows are read and chunked while a source's write is in flight;
* sources are written one at a time, in order (one transaction each);
* a failed write stops the import with that error, after the sources before it were written,
  and nothing after it is written; importing again writes exactly the rest (resumable).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from importers.dce import ALICE, BOB, GUILD, document, message, t, write
from omoide import Memory
from omoide.errors import StoreUnavailable
from omoide.knowledge import importing
from omoide.settings import Settings


def _export(tmp_path: Path, n: int) -> Path:
    """``n`` messages, a 3 h gap every 6: one window per 6 messages."""
    msgs = [
        message(
            t(3, 9) + timedelta(minutes=i) + timedelta(hours=3 * (i // 6)),
            f"line {i}",
            ALICE if i % 2 else BOB,
            increment=i,
        )
        for i in range(n)
    ]
    return write(tmp_path / "general.json", document(msgs))


def _settings(settings: Settings) -> Settings:
    return Settings(**{**settings.model_dump(), "embedder": "hashing"})


@pytest.fixture
def small_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importing, "SOURCE_WINDOWS", 2)  # 2 windows per source: 5 sources of 60 messages
    monkeypatch.setattr(importing, "BUILD_WINDOWS", 1)


async def test_the_next_source_is_built_while_one_is_written(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_sources: None
) -> None:
    built: list[int] = []
    real_drafts = importing.drafts_of
    monkeypatch.setattr(importing, "drafts_of", lambda windows, n: built.append(1) or real_drafts(windows, n))
    async with Memory.open(_settings(settings)) as mem:
        real_add = mem.store.knowledge.add_source
        seen: list[tuple[int, int]] = []  # (steps built when a write started, message id of its first chunk)

        async def slow_add(source: Any, chunks: Any, **kwargs: Any) -> Any:
            seen.append((len(built), int(chunks[0].location["message_ids"][0])))
            await asyncio.sleep(0.2)  # a slow database: the builder must not wait for it
            return await real_add(source, chunks, **kwargs)

        mem.store.knowledge.add_source = slow_add  # type: ignore[method-assign]
        summary = await mem.knowledge.import_export(_export(tmp_path, 60))
    assert (summary.sources, summary.new_messages) == (5, 60)
    firsts = [first for _, first in seen]
    assert firsts == sorted(firsts), "sources are written in order"
    # while the first source (2 windows) was written, the builder went on past one step ahead
    assert len(built) == 10
    assert seen[1][0] >= 5, seen


async def test_a_failed_write_stops_the_import_and_the_next_import_resumes(
    settings: Any, tmp_path: Path, small_sources: None
) -> None:
    path = _export(tmp_path, 60)
    async with Memory.open(_settings(settings)) as mem:
        real_add = mem.store.knowledge.add_source
        calls = [0]

        async def failing_add(source: Any, chunks: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if calls[0] == 3:
                raise StoreUnavailable("the database went away")
            return await real_add(source, chunks, **kwargs)

        mem.store.knowledge.add_source = failing_add  # type: ignore[method-assign]
        with pytest.raises(StoreUnavailable, match="went away"):
            await mem.knowledge.import_export(path)
        assert calls[0] == 3, "no write after the failed one"
        sources = await mem.knowledge.sources(workspace=GUILD["id"])
        assert sum(s.metadata["message_count"] for s in sources) == 24  # the two sources before it
        mem.store.knowledge.add_source = real_add  # type: ignore[method-assign]
        again = await mem.knowledge.import_export(path)
        assert (again.new_messages, again.known_messages, again.sources) == (36, 24, 3)
        sources = await mem.knowledge.sources(workspace=GUILD["id"])
        assert sum(s.metadata["message_count"] for s in sources) == 60
