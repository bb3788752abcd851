"""Hand-built turn hits (``unit="turn"``, ``line``, ``quote``) over chunks with line records, as
the chunker writes them: for tests of what renders and answers from search hits, independent of
how the search pipeline finds turns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from omoide.search.pipeline import SearchHit, SearchResult, StageScores
from omoide.stores.knowledge import ChunkId, SourceId
from omoide.stores.search import ChunkHit, SearchFilters

START = datetime(2025, 11, 15, 13, 30, tzinfo=UTC)

RELEASE = [  # (speaker, author id, message id, text)
    ("mika", "u1", "m1", "おはようございます"),
    ("ren", "u2", "m2", "v0.4.0 のリリースはどうなりましたか？"),
    ("mika", "u1", "m3", "CI が不安定なので v0.4.0 のリリースは来週に延期します"),
    ("ren", "u2", "m4", "了解です"),
    ("sora", "u3", "m5", "ランチはラーメンにしよう"),
]
WEATHER = [
    ("carol", "u4", "w1", "明日の天気は晴れです"),
    ("dave", "u5", "w2", "傘はいらないね"),
]


def chunk(chunk_id: int, lines: list[tuple[str, str, str, str]]) -> ChunkHit:
    """A chunk of chat lines with its line records, as the chunker writes them."""
    texts = [f"[2025-11-15 13:{30 + i:02d}] **{who}**: {said}" for i, (who, _a, _m, said) in enumerate(lines)]
    records: list[list[Any]] = []
    pos = 0
    for text, (_w, author, message, _s) in zip(texts, lines, strict=True):
        records.append([pos, pos + len(text), author, message])
        pos += len(text) + 1
    return ChunkHit(
        chunk_id=ChunkId(chunk_id),
        source_id=SourceId(1),
        score=0.5,
        rank=chunk_id,
        content="\n".join(texts),
        location={"lines": records, "message_ids": [m for _w, _a, m, _s in lines]},
        channel_id="dev",
        thread_id=None,
        author_ids=tuple(dict.fromkeys(a for _w, a, _m, _s in lines)),
        started_at=START,
        ended_at=START.replace(minute=30 + len(lines) - 1),
        source_type="discord_channel",
        source_title="#dev",
        source_uri=None,
    )


def turn(c: ChunkHit, line: int, rank: int) -> SearchHit:
    """The hit for line ``line`` of ``c``: a turn with its quote."""
    start, end, _author, message = c.location["lines"][line]
    return SearchHit(
        c,
        rank,
        1.0 / rank,
        StageScores(fused=1.0 / rank),
        unit="turn",
        line=line,
        message_ids=(message,),
        quote=c.content[start:end],
    )


def whole(c: ChunkHit, rank: int) -> SearchHit:
    return SearchHit(c, rank, 1.0 / rank, StageScores(fused=1.0 / rank), message_ids=tuple(c.location["message_ids"]))


RELEASE_CHUNK = chunk(12, RELEASE)
WEATHER_CHUNK = chunk(7, WEATHER)
# the release chunk's answer line first, the weather chunk, then two more turns of the release chunk
HITS = [turn(RELEASE_CHUNK, 2, 1), turn(WEATHER_CHUNK, 0, 2), turn(RELEASE_CHUNK, 1, 3), turn(RELEASE_CHUNK, 3, 4)]


class FakePipeline:
    """Returns the given hits for any query (what ``SearchPipeline.search`` would)."""

    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits

    async def search(
        self, query: str, filters: SearchFilters, *, k: int | None = None, mode: Any = None
    ) -> SearchResult:
        return SearchResult(query, "hybrid", tuple(self.hits), (query,), {"search": 1.0})

    async def search_evidence(
        self, query: str, filters: SearchFilters, *, chunks: int | None = None, mode: Any = None
    ) -> SearchResult:
        return await self.search(query, filters, mode=mode)


FILTERS = SearchFilters(workspace_id="g1")
