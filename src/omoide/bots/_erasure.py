"""The receipt of erasing a user, as the bots show it (``ForgetReport.as_dict()``, in ja or en).

Rendered from the report's counts, whatever kinds it has: a kind without a Japanese name
here is shown by its own name, so a new kind of record appears on the receipt the day the
erasure starts counting it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Lang = Literal["ja", "en"]

KIND_NAMES: dict[Lang, dict[str, str]] = {
    "en": {
        "summaries": "summary versions",
        "chunks_rewritten": "knowledge chunks rewritten",
        "chunks_deleted": "knowledge chunks deleted",
        "sources_deleted": "knowledge sources deleted",
        "transcripts": "transcript files",
    },
    "ja": {
        "memories": "メモリ",
        "sessions": "会話セッション",
        "messages": "メッセージ",
        "summaries": "要約（版）",
        "chunks_rewritten": "書き換えた長期記憶の断片",
        "chunks_deleted": "削除した長期記憶の断片",
        "sources_deleted": "削除した長期記憶のソース",
        "transcripts": "会話ログのファイル",
    },
}
"""Names of the kinds :meth:`ForgetReport.as_dict` counts; a kind not named here shows its key
(in English with spaces for underscores)."""

_HEADLINE: dict[Lang, tuple[str, str]] = {
    "en": (
        "Erased everything I kept about you in this {where}:",
        "I had nothing stored about you in this {where}: nothing was erased.",
    ),
    "ja": (
        "この{where}であなたについて保存していたデータを消去しました:",
        "この{where}にはあなたについて保存していたデータはありません。何も消去していません。",
    ),
}


def kind_name(kind: str, lang: Lang) -> str:
    """A kind of erased record as a reader says it (``chunks_deleted`` → ``knowledge chunks deleted``)."""
    return KIND_NAMES[lang].get(kind) or (kind.replace("_", " ") if lang == "en" else kind)


def describe_erasure(erased: Mapping[str, int], lang: Lang, *, where: str) -> str:
    """The receipt: a headline, then one ``• kind: count`` line per kind (none when nothing was stored).

    Args:
        erased: ``ForgetReport.as_dict()``.
        lang: ``ja`` or ``en``.
        where: the place, in ``lang`` (``server``, ``ワークスペース``…).
    """
    done, nothing = _HEADLINE[lang]
    if not any(erased.values()):
        return nothing.format(where=where)
    unit = " 件" if lang == "ja" else ""
    lines = [f"• {kind_name(kind, lang)}: {count:,}{unit}" for kind, count in erased.items()]
    return "\n".join([done.format(where=where), *lines])


__all__ = ["KIND_NAMES", "describe_erasure", "kind_name"]
