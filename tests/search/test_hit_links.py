"""SearchHit.jump_url: a message hit links to its own message when the chunk's link allows it."""

from __future__ import annotations

from typing import Any

import pytest

from omoide.search.results import SearchHit, StageScores, Unit
from omoide.stores.knowledge import ChunkId, SourceId
from omoide.stores.search import ChunkHit

CHUNK_LINK = "https://discord.com/channels/1/2/100"


def hit(
    location: dict[str, Any],
    *,
    unit: Unit = "turn",
    message_ids: tuple[Any, ...] = (102,),
    source_uri: str | None = "https://example.org/source",
) -> SearchHit:
    chunk = ChunkHit(
        chunk_id=ChunkId(1),
        source_id=SourceId(1),
        score=1.0,
        rank=1,
        content="a\nb\nc",
        location=location,
        channel_id="2",
        thread_id=None,
        author_ids=(),
        started_at=None,
        ended_at=None,
        source_type="discord_channel",
        source_title="#general",
        source_uri=source_uri,
    )
    return SearchHit(chunk, 1, 1.0, StageScores(), unit=unit, line=2, message_ids=message_ids)


def test_a_turn_links_to_its_own_message():
    assert hit({"jump_url": CHUNK_LINK, "message_ids": ["100", "101", "102"]}).jump_url == (
        "https://discord.com/channels/1/2/102"
    )
    assert hit({"url": CHUNK_LINK, "message_ids": [100, 101, 102]}, message_ids=("101",)).jump_url == (
        "https://discord.com/channels/1/2/101"
    )


@pytest.mark.parametrize(
    ("location", "unit", "message_ids"),
    [
        ({"jump_url": CHUNK_LINK, "message_ids": ["100", "102"]}, "chunk", ("100", "102")),  # a chunk hit
        ({"jump_url": "https://example.org/thread/7", "message_ids": ["100"]}, "turn", ("102",)),  # not its first
        ({"jump_url": CHUNK_LINK}, "turn", ("102",)),  # no message ids to check the link against
        ({"jump_url": CHUNK_LINK, "message_ids": ["100"]}, "turn", ("1700000000.0001",)),  # not an id of that kind
    ],
    ids=["chunk hit", "link of another message", "no message ids", "other id kind"],
)
def test_the_chunks_link_otherwise(location, unit, message_ids):
    assert hit(location, unit=unit, message_ids=message_ids).jump_url == location["jump_url"]


def test_without_a_link_the_source_uri():
    assert hit({"message_ids": ["100"]}).jump_url == "https://example.org/source"


def session_hit(source_uri: str | None, platform_ids: dict[str, str], own: int = 42) -> SearchHit:
    location = {"message_ids": [41, 42], "platform_message_ids": platform_ids}
    return hit(location, message_ids=(own,), source_uri=source_uri)


def test_an_archived_conversations_turn_links_to_its_platform_message():
    ids = {"41": "9001", "42": "9002"}
    assert session_hit("https://discord.com/channels/1/2/9001", ids).jump_url == "https://discord.com/channels/1/2/9002"
    assert session_hit("https://discord.com/channels/1/2", ids).jump_url == "https://discord.com/channels/1/2/9002"
    # no platform id for this message, another kind of link, no link at all: as the source says
    assert session_hit("https://discord.com/channels/1/2/9001", {"41": "9001"}).jump_url == (
        "https://discord.com/channels/1/2/9001"
    )
    assert session_hit("slack://channel?team=T1&id=C1", ids).jump_url == "slack://channel?team=T1&id=C1"
    assert session_hit(None, ids).jump_url is None
