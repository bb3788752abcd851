"""``omoide export``: what omoide keeps about a workspace, or about one user in it, as JSONL.

The answer to a data-subject access request (or a workspace leaving). One JSON object per
line, read from one snapshot of the database; the first line says what the file is::

    {"table": "export", "format_version": 1, "workspace": "W", "user": "U", "omoide_version": "…", "created_at": "…"}
    {"table": "sessions", "id": 3, "session_key": "…", "user_id": "U", …}
    {"table": "session_messages", "id": 17, "session_id": 3, "role": "user", "content": [{"type": "text", …}], …}
    …

Rows are the backup's neutral form (:mod:`omoide.ops.tables`: ISO timestamps, parsed JSON),
without what is derived or secret: search tokens (``lexical``, ``unit_lexical``), vectors,
API keys and erasure bookkeeping. What a **user** export holds (``docs/operations.md``):

* ``sessions`` of theirs (``user_id``) or that hold a message they wrote (a shared one
  without its compaction summary and member list), and
  ``session_messages`` they wrote or that belong to their own sessions (the bot's replies to them);
* ``knowledge_chunks`` with their words, cut down to **their lines only** (another
  person's words in the same conversation are not theirs to receive), with the
  ``knowledge_sources`` those chunks come from (without member lists and participants);
* their ``memories`` and ``memory_events`` (the history of each memory);
* ``summaries`` about them (scope ``user``).

A **workspace** export holds every row of those tables in the workspace, whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from omoide import __version__
from omoide.errors import InvalidInput
from omoide.ops._codec import Row, iso
from omoide.ops.backup import backend_of, open_source
from omoide.ops.tables import BY_NAME, Table
from omoide.stores._erasure_common import LINES_KEY

EXPORT_FORMAT_VERSION = 1
EXPORT_TABLES = (
    "sessions",
    "session_messages",
    "knowledge_sources",
    "knowledge_chunks",
    "memories",
    "memory_events",
    "summaries",
)
"""The tables an export reads, in this order."""

HIDDEN_COLUMNS = frozenset({"lexical", "unit_lexical"})
"""Derived search tokens: not the person's data, and noise in an export."""

_WORKSPACE = "workspace_id = :ws"
_THEIR_SESSIONS = (
    "workspace_id = :ws AND (user_id = :user OR id IN "
    "(SELECT session_id FROM session_messages WHERE workspace_id = :ws AND author_id = :user))"
)
_THEIR_MESSAGES = (
    "workspace_id = :ws AND (author_id = :user OR session_id IN "
    "(SELECT id FROM sessions WHERE workspace_id = :ws AND user_id = :user))"
)
_AUTHORED = {
    "sqlite": "EXISTS (SELECT 1 FROM json_each(knowledge_chunks.author_ids) WHERE json_each.value = :user)",
    "postgresql": "knowledge_chunks.author_ids @> jsonb_build_array(:user::text)",
}


def _user_filters(backend: str) -> dict[str, str]:
    authored = f"workspace_id = :ws AND {_AUTHORED[backend]}"
    return {
        "sessions": _THEIR_SESSIONS,
        "session_messages": _THEIR_MESSAGES,
        "knowledge_sources": f"workspace_id = :ws AND id IN (SELECT source_id FROM knowledge_chunks WHERE {authored})",
        "knowledge_chunks": authored,
        "memories": "workspace_id = :ws AND user_id = :user",
        "memory_events": "workspace_id = :ws AND user_id = :user",
        "summaries": "workspace_id = :ws AND scope = 'user' AND scope_id = :user",
    }


def their_lines(row: Row, user: str) -> Row:
    """A chunk cut down to ``user``'s lines: ``content`` joins them, ``lines`` lists each with its message id.

    A chunk stored before line records existed cannot be split by author: its content is
    left out (``content: null``) and ``lines`` is empty.
    """
    location = row.get("location") or {}
    spans = location.get(LINES_KEY) if isinstance(location, dict) else None
    content = str(row.get("content") or "")
    lines: list[dict[str, Any]] = []
    for span in spans or []:
        if isinstance(span, list) and len(span) >= 3 and span[2] == user:
            lines.append(
                {"text": content[int(span[0]) : int(span[1])], "message_id": span[3] if len(span) > 3 else None}
            )
    out = {k: v for k, v in row.items() if k not in ("content", "location", "members")}
    out["content"] = "\n".join(line["text"] for line in lines) if spans else None
    out["lines"] = lines
    return out


def _for_user(table: str, row: Row, user: str) -> Row:
    """A row of a user's export without what is about other people: a shared chunk's other lines, a
    shared session's compaction summary (it may quote anyone) and member lists."""
    if table == "knowledge_chunks":
        return their_lines(row, user)
    if table == "sessions" and row.get("user_id") != user:
        return {k: v for k, v in row.items() if k not in ("context_summary", "members")}
    if table == "knowledge_sources":
        out = {k: v for k, v in row.items() if k != "members"}
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "participants"}
        return out
    return row


@dataclass(frozen=True, slots=True)
class ExportScope:
    """Whose data: a workspace, or one user in it."""

    workspace: str
    user: str | None = None

    def __post_init__(self) -> None:
        if not self.workspace.strip():
            raise InvalidInput("export needs a workspace id (--workspace W)")
        if self.user is not None and not self.user.strip():
            raise InvalidInput("the user id to export is empty")

    @property
    def params(self) -> dict[str, str]:
        return {"ws": self.workspace} | ({"user": self.user} if self.user is not None else {})


def header(scope: ExportScope) -> Row:
    """The first line of an export."""
    return {
        "table": "export",
        "format_version": EXPORT_FORMAT_VERSION,
        "workspace": scope.workspace,
        "user": scope.user,
        "omoide_version": __version__,
        "created_at": iso(datetime.now(UTC)),
    }


async def export_rows(url: str, scope: ExportScope, *, counts: dict[str, int] | None = None) -> AsyncIterator[Row]:
    """Every exported row of ``scope`` in the database at ``url``, header first, from one snapshot.

    Args:
        url: the database.
        scope: the workspace, and the user when exporting one user's data.
        counts: filled with the rows exported per table, as they go.

    Raises:
        InvalidInput: an empty workspace or user id.
        NotFoundError: an SQLite file that does not exist.
        ConfigError: an in-memory SQLite database.
    """
    backend = backend_of(url)
    filters = _user_filters(backend) if scope.user is not None else dict.fromkeys(EXPORT_TABLES, _WORKSPACE)
    async with open_source(url) as source:
        yield header(scope)  # after opening: a caller that reads the header first has seen every open error
        have = await source.columns()
        for name in EXPORT_TABLES:
            if name not in have:
                continue
            table: Table = BY_NAME[name]
            columns = tuple(c for c in have[name] if c not in HIDDEN_COLUMNS)
            async for batch in source.batches(table, columns, where=filters[name], params=scope.params):
                for row in batch:
                    if scope.user is not None:
                        row = _for_user(name, row, scope.user)
                    yield {"table": name, **row}
                if counts is not None:
                    counts[name] = counts.get(name, 0) + len(batch)


def line(row: Mapping[str, Any]) -> str:
    """One JSONL line (UTF-8 text, not ASCII-escaped)."""
    import json

    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


__all__ = ["EXPORT_TABLES", "ExportScope", "export_rows", "header", "line", "their_lines"]
