"""The user-facing texts of answers, in Japanese (the default) and English."""

from __future__ import annotations

from typing import Literal

Language = Literal["ja", "en"]
LANGUAGES: tuple[Language, ...] = ("ja", "en")

NO_DATA: dict[Language, str] = {
    "ja": "まだ同期されたメッセージがありません。チャット履歴を取り込んでから再度お試しください。",
    "en": "There are no synced messages yet. Import or archive your chat history, then try again.",
}
"""Seed 004's answer when the workspace has nothing to search (its ``/sync`` is importing or archiving history)."""

NO_MATCH: dict[Language, str] = {
    "ja": "指定された条件（チャンネル・ユーザー・期間など）に一致するメッセージが見つかりませんでした。",
    "en": "No messages match the given filters (channel, user, time range, …).",
}
"""The answer when filters narrowed the search and nothing matched."""

NO_HITS: dict[Language, str] = {
    "ja": "質問の言葉を含むメッセージが見つかりませんでした。別の言葉で試してみてください。",
    "en": "No messages contain the question's words. Try other words.",
}
"""The answer when the workspace has knowledge but a search by words alone (lexical mode, or
chunks not embedded yet) found nothing: not :data:`NO_DATA`, which would say nothing was synced."""

FALLBACK_NOTE: dict[Language, str] = {
    "ja": "（注: ベクトル検索に失敗したため、キーワード検索の結果だけで回答しています）",
    "en": "(Note: vector search failed, so this answer is based on keyword search results only.)",
}
"""Appended to an answer generated from lexical results after a vector failure."""


def check_language(language: object) -> Language:
    """``language`` if it is ``ja`` or ``en``.

    Raises:
        InvalidInput: anything else.
    """
    from omoide.errors import InvalidInput

    if language == "ja":
        return "ja"
    if language == "en":
        return "en"
    raise InvalidInput(f"answer language must be 'ja' or 'en', got {language!r}")


__all__ = ["FALLBACK_NOTE", "LANGUAGES", "NO_DATA", "NO_HITS", "NO_MATCH", "Language", "check_language"]
