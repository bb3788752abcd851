"""How the Slack bot writes: its texts in English and Japanese, ``mrkdwn`` and message splitting.

Markdown from the model becomes Slack ``mrkdwn`` (:func:`to_mrkdwn`) with ``<``, ``>`` and
``&`` escaped so a reply can never ping ``@channel``; long replies are split at paragraph
boundaries (:func:`split_reply`) into messages of at most :data:`MESSAGE_LIMIT` characters.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from omoide.bots._split import split_message

if TYPE_CHECKING:
    from omoide.stores.memories import MemoryRecord

MESSAGE_LIMIT = 3_500
"""Characters per posted message: long replies are split on paragraphs below this."""
HARD_LIMIT = 40_000
"""Slack truncates a message's ``text`` beyond this many characters."""

Lang = Literal["ja", "en"]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

TEXTS: dict[Lang, dict[str, str]] = {
    "en": {
        "empty_mention": "Yes? Mention me with a question, or DM me.",
        "ask_usage": "Usage: `{cmd} &lt;question&gt;` — a cited answer from this workspace's history.",
        "question": "*Q:* {question}",
        "sources": "*Sources*",
        "memory_usage": (
            "Usage: `{cmd} add &lt;what to remember&gt;` · `{cmd} search &lt;query&gt;` · "
            "`{cmd} list [page]` · `{cmd} delete &lt;id&gt;` — only your own memories. "
            "`{cmd} forget-me` erases everything I keep about you."
        ),
        "remembered": "Remembered as memory `#{id}`.",
        "updated": "Updated memory `#{id}` (you had told me nearly the same thing).",
        "no_match": "None of your memories matches. `{cmd} list` shows them all.",
        "no_memories": "You have no memories here yet. Add one with `{cmd} add …`.",
        "no_page": "No memories on page {page}.",
        "page": "Your memories (page {page}):",
        "deleted": "Deleted memory `#{id}`.",
        "not_found": "You have no memory `#{id}`. `{cmd} list` shows yours.",
        "bad_id": "Memory ids are numbers, e.g. `{cmd} delete 12`.",
        "model_failed": ":warning: The language model failed ({code}). Please try again in a moment.",
        "failed": ":warning: Something went wrong ({code}).",
        "no_answer": "(no answer)",
        "forget_confirm": (
            "This erases *everything I keep about you in this workspace*: your memories, your conversation "
            "sessions and every message you wrote, your lines in long-term knowledge, the summaries drawn "
            "from them and your transcripts. It cannot be undone. Continue?"
        ),
        "forget_yes": "Erase my data",
        "forget_no": "Cancel",
        "forget_cancelled": "Cancelled: nothing was erased.",
        "workspace": "workspace",
    },
    "ja": {
        "empty_mention": "はい？質問と一緒にメンションするか、DM してください。",
        "ask_usage": "使い方: `{cmd} &lt;質問&gt;` — このワークスペースの履歴から出典付きで答えます。",
        "question": "*質問:* {question}",
        "sources": "*根拠*",
        "memory_usage": (
            "使い方: `{cmd} add &lt;覚えること&gt;` · `{cmd} search &lt;検索語&gt;` · "
            "`{cmd} list [ページ]` · `{cmd} delete &lt;id&gt;` — 自分のメモリだけが対象です。"
            "`{cmd} forget-me` であなたについてのデータをすべて消去します。"
        ),
        "remembered": "メモリ `#{id}` として覚えました。",
        "updated": "メモリ `#{id}` を更新しました（ほぼ同じ内容がすでにありました）。",
        "no_match": "一致するメモリはありません。`{cmd} list` で一覧できます。",
        "no_memories": "まだメモリはありません。`{cmd} add …` で追加できます。",
        "no_page": "{page} ページ目にメモリはありません。",
        "page": "あなたのメモリ（{page} ページ目）:",
        "deleted": "メモリ `#{id}` を削除しました。",
        "not_found": "あなたのメモリに `#{id}` はありません。`{cmd} list` で一覧できます。",
        "bad_id": "メモリ id は数字です（例: `{cmd} delete 12`）。",
        "model_failed": ":warning: 言語モデルの呼び出しに失敗しました（{code}）。少し待ってからもう一度どうぞ。",
        "failed": ":warning: エラーが発生しました（{code}）。",
        "no_answer": "（回答なし）",
        "forget_confirm": (
            "このワークスペースで保存している*あなたについてのデータをすべて*消去します: メモリ、会話セッションと"
            "あなたが書いたすべてのメッセージ、長期記憶の中のあなたの発言、それをもとにした要約、会話ログ。"
            "元に戻せません。続けますか？"
        ),
        "forget_yes": "データを消去する",
        "forget_no": "キャンセル",
        "forget_cancelled": "キャンセルしました。何も消去していません。",
        "workspace": "ワークスペース",
    },
}


def ts_time(ts: str) -> datetime:
    """A Slack ``ts`` (``"1712345678.123456"``) as an exact UTC datetime."""
    seconds, _, fraction = ts.partition(".")
    return datetime.fromtimestamp(int(seconds), tz=UTC) + timedelta(microseconds=int(fraction[:6].ljust(6, "0")))


def time_ts(when: datetime) -> str:
    """The Slack ``ts`` of a datetime (the inverse of :func:`ts_time`, to the microsecond)."""
    micros = (when - _EPOCH) // timedelta(microseconds=1)
    seconds, rest = divmod(micros, 1_000_000)
    return f"{seconds}.{rest:06d}"


def escape(text: str) -> str:
    """Escape the three characters Slack reserves for control sequences (``@channel`` pings, links)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_QUOTE = re.compile(r"^&gt;(?=[ \t]|$)", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[*+-][ \t]+", re.MULTILINE)


def to_mrkdwn(text: str) -> str:
    """Model Markdown → Slack ``mrkdwn``, escaped.

    ``**b**`` → ``*b*``, ``[t](url)`` → ``<url|t>``, headings → bold lines, ``~~s~~`` →
    ``~s~``, ``*``/``-`` bullets → ``•``; code blocks are only escaped; ``> quotes`` stay quotes.
    """
    pieces = escape(text).split("```")
    for i in range(0, len(pieces), 2):  # outside code blocks
        piece = _HEADING.sub(lambda m: f"*{m.group(1)}*", pieces[i])
        piece = _BULLET.sub(r"\1• ", piece)
        piece = _BOLD.sub(r"*\1*", piece)
        piece = _STRIKE.sub(r"~\1~", piece)
        piece = _LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1).replace('|', '/')}>", piece)
        pieces[i] = _QUOTE.sub(">", piece)
    return "```".join(pieces)


def split_reply(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """Split a reply into messages of at most ``limit`` characters at paragraph boundaries.

    Paragraphs (separated by blank lines outside code blocks) are packed greedily; one
    longer than ``limit`` is cut by :func:`omoide.bots._split.split_message` (between lines,
    then sentences, then words; code blocks closed and reopened).
    """
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.strip("\n").split("\n"):
        if line.count("```") % 2 == 1:
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    parts: list[str] = []
    buffer = ""
    for block in blocks:
        for piece in [block] if len(block) <= limit else split_message(block, limit):
            candidate = f"{buffer}\n\n{piece}" if buffer else piece
            if len(candidate) <= limit:
                buffer = candidate
            else:
                if buffer:
                    parts.append(buffer)
                buffer = piece
    if buffer:
        parts.append(buffer)
    return [part for part in parts if part.strip()]


def link(url: str | None, label: str) -> str:
    """``<url|label>`` (escaped), or the escaped label alone without a URL."""
    text = escape(label).replace("|", "/")
    return f"<{url}|{text}>" if url else text


def memory_line(memory: MemoryRecord) -> str:
    """One memory as a line of a ``/memory`` reply: its id, content, category, tags and date."""
    tags = f" · {', '.join(memory.tags)}" if memory.tags else ""
    return f"`#{memory.id}` {escape(memory.content)} _({escape(memory.category)}{escape(tags)} · {memory.updated_at:%Y-%m-%d})_"


__all__ = [
    "HARD_LIMIT",
    "MESSAGE_LIMIT",
    "TEXTS",
    "Lang",
    "escape",
    "link",
    "memory_line",
    "split_reply",
    "time_ts",
    "to_mrkdwn",
    "ts_time",
]
