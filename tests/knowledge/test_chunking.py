"""Chunking: message windows, token windows, long messages, formatting, locations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from omoide.errors import ConfigError
from omoide.knowledge.chunking import Chunker, ChunkingOptions, author_label, format_message, render_body
from omoide.models import Message, MessageId, SessionId, ToolResultBlock, ToolUseBlock
from omoide.providers import tokens
from omoide.settings import Settings

T0 = datetime(2026, 1, 19, 10, 0, tzinfo=UTC)


def conversation(n: int, *, text: str = "今日の天気はどうですか？ The weather is nice.") -> list[Message]:
    out = []
    for i in range(n):
        when = T0 + timedelta(minutes=i)
        if i % 2 == 0:
            m = Message.user(f"{i}: {text}", author_id="u1", author_name="Alice", created_at=when)
        else:
            m = Message.assistant(f"{i}: はい、晴れです。", author_id="bot", author_name="omoide", created_at=when)
        out.append(m.with_stored(id=MessageId(100 + i), session_id=SessionId(7), seq=i + 1))
    return out


def ranges(drafts) -> list[tuple[int, int]]:
    return [(d.location["seq_start"], d.location["seq_end"]) for d in drafts]


def test_seed_000_format_with_names_and_times():
    m = Message.user("こんにちは", author_name="Alice", created_at=T0)
    assert format_message(m) == "[2026-01-19 10:00] **Alice (User)**: こんにちは"
    assert author_label(Message.user("x")) == "User"
    assert author_label(Message.assistant("x")) == "Assistant"
    assert format_message(Message.assistant("はい", created_at=T0)) == "[2026-01-19 10:00] **Assistant**: はい"


def test_tool_blocks_are_rendered_in_brackets():
    m = Message(
        "assistant",
        (ToolUseBlock("t1", "search", {"q": "天気"}),),
    )
    assert render_body(m) == '[tool call search: {"q":"天気"}]'
    r = Message("user", (ToolResultBlock("t1", "晴れ", is_error=False),))
    assert render_body(r) == "[tool result: 晴れ]"
    assert render_body(Message("user", (ToolResultBlock("t1", "boom", is_error=True),))) == "[tool error: boom]"


def test_message_based_windows_overlap_and_cover_everything():
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2)).chunk(conversation(23), total=23, session_id=7)
    assert ranges(drafts) == [(1, 10), (9, 18), (17, 23)]
    covered = {i for d in drafts for i in d.location["message_ids"]}
    assert covered == {100 + i for i in range(23)}
    first = drafts[0]
    assert first.location["total"] == 23
    assert first.location["session_id"] == 7
    assert first.location["message_count"] == 10
    assert first.content.startswith("[2026-01-19 10:00] **Alice (User)**: 0: 今日の天気")
    assert "\n\n[2026-01-19 10:01] **omoide (Assistant)**: 1: はい" in first.content
    assert first.author_ids == ("u1", "bot")
    assert first.started_at == T0
    assert first.ended_at == T0 + timedelta(minutes=9)
    assert first.token_count == tokens.get_token_counter().count(first.content)


def test_no_trailing_window_repeats_the_previous_one():
    # seed 000's loop would add a chunk of messages 9-10 that the first chunk already holds
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2)).chunk(conversation(10))
    assert ranges(drafts) == [(1, 10)]
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2)).chunk(conversation(11))
    assert ranges(drafts) == [(1, 10), (9, 11)]


def test_empty_input_gives_no_chunks():
    assert Chunker(ChunkingOptions()).chunk([]) == []


def test_message_windows_are_cut_short_by_the_token_limit():
    long_text = "長いメッセージです。" * 30  # ~300 tokens per message
    drafts = Chunker(ChunkingOptions(messages=10, overlap=2, max_tokens=700)).chunk(conversation(6, text=long_text))
    assert all(d.token_count <= 700 for d in drafts)
    covered = sorted({i for d in drafts for i in d.location["message_ids"]})
    assert covered == [100 + i for i in range(6)]
    assert len(drafts) > 1


def test_token_based_windows():
    opts = ChunkingOptions(strategy="token_based", max_tokens=120, token_overlap=40)
    drafts = Chunker(opts).chunk(conversation(12))
    assert all(d.token_count <= 120 for d in drafts)
    covered = sorted({i for d in drafts for i in d.location["message_ids"]})
    assert covered == [100 + i for i in range(12)]
    # neighbours share a message (the overlap) and every window moves forward
    for a, b in zip(ranges(drafts), ranges(drafts)[1:], strict=False):
        assert b[0] > a[0]
        assert b[0] <= a[1] + 1


def test_a_message_longer_than_a_chunk_is_split_into_parts():
    body = "あいうえお、かきくけこ。" * 400 + " tail-marker"
    m = Message.user(body, author_name="Alice", created_at=T0).with_stored(
        id=MessageId(1), session_id=SessionId(1), seq=1
    )
    drafts = Chunker(ChunkingOptions(max_tokens=256)).chunk([m])
    assert len(drafts) > 3
    assert all(d.token_count <= 256 for d in drafts)
    parts = [d.location["part"] for d in drafts]
    assert parts == list(range(1, len(drafts) + 1))
    assert {d.location["parts"] for d in drafts} == {len(drafts)}
    assert drafts[0].content.startswith(f"[2026-01-19 10:00] **Alice (User)** (1/{len(drafts)}): ")
    # nothing lost at the cuts
    joined = "".join(d.content.split("): ", 1)[1] for d in drafts)
    assert joined.replace(" ", "") == body.replace(" ", "")
    assert "tail-marker" in drafts[-1].content


def test_lexical_tokens_come_from_names_and_text_not_labels_or_times():
    drafts = Chunker(ChunkingOptions(), tokenize=lambda text: text.lower().split()).chunk(conversation(2, text="Hello"))
    lexical = drafts[0].lexical.split()
    assert "alice" in lexical and "hello" in lexical
    assert "**alice" not in drafts[0].lexical
    assert "2026-01-19" not in drafts[0].lexical and "(user)**:" not in drafts[0].lexical


def test_default_lexical_is_tokenize_for_search():
    from omoide.text import tokenize_for_search

    drafts = Chunker(ChunkingOptions()).chunk(conversation(1, text="天気"))
    assert set(tokenize_for_search("天気")) <= set(drafts[0].lexical.split())


def test_the_tiktoken_encoding_is_loaded_once():
    chunker = Chunker(ChunkingOptions())
    before = tokens.load_encoding.cache_info()
    for _ in range(5):
        chunker.chunk(conversation(30))
    after = tokens.load_encoding.cache_info()
    assert after.misses == before.misses


def test_options_from_settings_and_validation():
    s = Settings(chunk_strategy="token_based", chunk_messages=6, chunk_overlap=1, chunk_max_tokens=300)
    opts = ChunkingOptions.from_settings(s)
    assert (opts.strategy, opts.messages, opts.overlap, opts.max_tokens) == ("token_based", 6, 1, 300)
    with pytest.raises(ConfigError, match="chunk_overlap"):
        ChunkingOptions(messages=3, overlap=3)
    with pytest.raises(ConfigError, match="chunk strategy"):
        ChunkingOptions(strategy="sentences")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="chunk_token_overlap"):
        ChunkingOptions(max_tokens=100, token_overlap=60)


def test_settings_reject_an_overlap_as_large_as_the_window():
    from omoide.settings import load_settings

    with pytest.raises(ConfigError, match="chunk_overlap"):
        load_settings(chunk_messages=4, chunk_overlap=4)
