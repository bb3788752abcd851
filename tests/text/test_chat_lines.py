"""Chunk lines as the lexical index and the embedder see them."""

from __future__ import annotations

from omoide.text.chat_lines import chunk_embedding_text, split_chat_lines

CHUNK = (
    "[2026-01-19 10:00] **Alice (User)**: 今日の天気は？\n  続き\n"
    "[2026-01-19 10:01] **Assistant**: 晴れ\n"
    "[2026-01-19 10:02] **bob** (2/3): part two"
)


def test_split_chat_lines_gives_speakers_and_what_they_said() -> None:
    assert split_chat_lines(CHUNK) == [("Alice", "今日の天気は？\n  続き"), (None, "晴れ"), ("bob", "part two")]


def test_the_embedded_text_keeps_names_and_words_and_drops_times_and_markup() -> None:
    """Times and bold role labels are most of a short chunk's tokens and mean nothing to a
    sentence model; the speaker's name stays (questions name people)."""
    assert chunk_embedding_text(CHUNK) == "Alice: 今日の天気は？\n  続き\n晴れ\nbob: part two"


def test_text_without_chat_lines_is_embedded_as_it_is() -> None:
    assert chunk_embedding_text("a document without headers") == "a document without headers"
    assert chunk_embedding_text("   ") == ""
