"""Column lists and row -> domain-object conversion for the session tables."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from omoide.models import (
    KeyPolicy,
    Message,
    MessageId,
    Session,
    SessionId,
    SessionStatus,
    blocks_from_json,
    ensure_utc,
    with_text_tokens,
)

SESSION_COLUMNS = (
    "id, session_key, policy, platform, workspace_id, channel_id, thread_id, user_id, agent_id, status, "
    "version, last_seq, archived_seq, window_start_seq, last_active_at, created_at, context_summary, context_summary_seq, "
    "private, members"
)
MESSAGE_COLUMNS = (
    "id, session_id, seq, role, content, author_id, author_name, is_bot, platform_message_id, created_at, token_count"
)


def row_to_session(row: Mapping[str, Any]) -> Session:
    return Session(
        id=SessionId(int(row["id"])),
        key=row["session_key"],
        policy=KeyPolicy(row["policy"]),
        platform=row["platform"],
        workspace_id=row["workspace_id"],
        channel_id=row["channel_id"],
        thread_id=row["thread_id"],
        user_id=row["user_id"],
        agent_id=row["agent_id"],
        status=SessionStatus(row["status"]),
        version=int(row["version"]),
        last_seq=int(row["last_seq"]),
        archived_seq=int(row["archived_seq"]),
        window_start_seq=int(row["window_start_seq"]),
        last_active_at=ensure_utc(row["last_active_at"]),
        created_at=ensure_utc(row["created_at"]),
        context_summary=row["context_summary"],
        context_summary_seq=int(row["context_summary_seq"]),
        private=bool(row["private"]),
        members=tuple(json.loads(row["members"])),
    )


def row_to_message(row: Mapping[str, Any]) -> Message:
    """A stored message; ``content`` is jsonb, which asyncpg hands over as JSON text."""
    return Message(
        role=row["role"],
        content=with_text_tokens(blocks_from_json(row["content"]), row["token_count"]),
        author_id=row["author_id"],
        author_name=row["author_name"],
        is_bot=bool(row["is_bot"]),
        message_id=row["platform_message_id"],
        created_at=ensure_utc(row["created_at"]),
        id=MessageId(int(row["id"])),
        session_id=SessionId(int(row["session_id"])),
        seq=int(row["seq"]),
    )


__all__ = ["MESSAGE_COLUMNS", "SESSION_COLUMNS", "row_to_message", "row_to_session"]
