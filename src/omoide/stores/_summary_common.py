"""Input checks shared by the summary operations of both backends (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from omoide.errors import InvalidInput
from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

MESSAGE_SCOPES = (SummaryScope.CHANNEL, SummaryScope.THREAD, SummaryScope.USER)


def check_scope_key(workspace_id: object, scope: object, scope_id: object, kind: object | None = None) -> None:
    if not isinstance(workspace_id, str) or not workspace_id:
        raise InvalidInput(f"workspace_id must be non-empty text, got {workspace_id!r}")
    try:
        SummaryScope(str(scope))
    except ValueError:
        allowed = ", ".join(s.value for s in SummaryScope)
        raise InvalidInput(f"unknown summary scope {scope!r}; allowed: {allowed}") from None
    if not isinstance(scope_id, str) or not scope_id:
        raise InvalidInput(f"scope_id must be non-empty text, got {scope_id!r}")
    if kind is not None:
        try:
            SummaryKind(str(kind))
        except ValueError:
            raise InvalidInput(f"unknown summary kind {kind!r}; allowed: short_term, long_term") from None


def check_summary_draft(draft: object) -> SummaryDraft:
    if not isinstance(draft, SummaryDraft):
        raise InvalidInput(f"save_summary needs a SummaryDraft, got {type(draft).__name__}")
    check_scope_key(draft.workspace_id, draft.scope, draft.scope_id, draft.kind)
    if not isinstance(draft.content, str) or not draft.content.strip():
        raise InvalidInput("a summary's content must be non-empty text")
    if isinstance(draft.source_message_count, bool) or not isinstance(draft.source_message_count, int):
        raise InvalidInput("source_message_count must be an integer")
    if draft.source_message_count < 0:
        raise InvalidInput("source_message_count must not be negative")
    if draft.source_latest_message_at is not None and not isinstance(draft.source_latest_message_at, datetime):
        raise InvalidInput("source_latest_message_at must be a datetime or None")
    if not isinstance(draft.metadata, Mapping):
        raise InvalidInput("a summary's metadata must be a JSON object")
    return draft


def check_message_scope(scope: object) -> SummaryScope:
    chosen = SummaryScope(scope) if isinstance(scope, str) else scope
    if chosen not in MESSAGE_SCOPES:
        raise InvalidInput(f"messages are read per channel, thread or user, not per {scope!r}")
    assert isinstance(chosen, SummaryScope)
    return chosen


__all__ = ["MESSAGE_SCOPES", "check_message_scope", "check_scope_key", "check_summary_draft"]
