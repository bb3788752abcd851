"""Request and response models of the HTTP API (pydantic, with OpenAPI examples).

The memory, search and answer responses are the models it shares with the MCP server:
:mod:`omoide.api_models`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from omoide.models import Message, Session
from omoide.stores.api_keys import ApiKeyRecord

T = TypeVar("T")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- sessions


class SessionRef(_In):
    """Which session: its ``key`` (``discord:123:c=456:u=789``, in your workspace), or the parts
    that build it with the server's key policy. The workspace is always your API key's."""

    key: str | None = Field(None, max_length=2048, examples=["discord:1290478288896131072:c=42:u=7"])
    platform: str = Field("api", min_length=1, max_length=256, examples=["discord"])
    channel: str | None = Field(None, max_length=256, examples=["42"])
    thread: str | None = Field(None, max_length=256)
    user: str | None = Field(None, max_length=256, examples=["7"])
    agent: str | None = Field(None, max_length=256)
    policy: Literal["user_channel", "channel", "thread", "agent"] | None = None

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"platform": "discord", "channel": "42", "user": "7"}]}
    )

    @model_validator(mode="after")
    def _key_or_parts(self) -> SessionRef:
        beside = [name for name in SESSION_PARTS if name in self.model_fields_set]
        if self.key is not None and beside:
            raise ValueError(key_with_parts(beside))
        return self


SESSION_PARTS = ("platform", "channel", "thread", "user", "agent", "policy")


def key_with_parts(parts: list[str]) -> str:
    """Why a session named by its ``key`` and by ``parts`` as well is refused."""
    return (
        f"give the session's key or its parts, not both: the key names the session alone, and "
        f"{', '.join(parts)} would be ignored"
    )


class ContentBlockIn(_In):
    """A content block: ``text``, ``tool_use`` or ``tool_result`` (as in the JSONL transcripts)."""

    type: Literal["text", "tool_use", "tool_result"]
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    content: str | None = None
    is_error: bool | None = None


class AppendIn(_In):
    session: SessionRef
    role: Literal["user", "assistant"] = "user"
    text: str | None = Field(None, description="The message's text (or give `content` blocks).")
    content: list[ContentBlockIn] | None = Field(None, max_length=256)
    author_id: str | None = Field(None, max_length=256)
    author_name: str | None = Field(None, max_length=256)
    is_bot: bool | None = None
    message_id: str | None = Field(None, max_length=256, description="Platform id: re-sending it stores nothing.")
    created_at: datetime | None = None
    private: bool | None = Field(
        None,
        description=(
            "Mark the conversation private (a DM, a private channel) or public; its archived knowledge is "
            "then visible only to `members`, the session's user and its speakers. Omitted: unchanged."
        ),
    )
    members: list[str] = Field(default_factory=list, max_length=1000)

    @model_validator(mode="after")
    def _text_or_content(self) -> AppendIn:
        if self.text is not None and self.content is not None:
            raise ValueError("give the message's text or its content blocks, not both (text would be ignored)")
        return self

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "session": {"platform": "discord", "channel": "42", "user": "7"},
                    "text": "明日の勉強会は何時から？",
                    "author_id": "7",
                    "message_id": "1311000000000000001",
                }
            ]
        },
    )


class MessageOut(BaseModel):
    id: int | None
    seq: int | None
    role: str
    text: str
    content: list[dict[str, Any]]
    author_id: str | None
    author_name: str | None
    is_bot: bool
    message_id: str | None
    created_at: datetime

    @classmethod
    def of(cls, m: Message) -> MessageOut:
        return cls(
            id=None if m.id is None else int(m.id),
            seq=m.seq,
            role=m.role,
            text=m.text,
            content=[b.to_dict() for b in m.content],
            author_id=m.author_id,
            author_name=m.author_name,
            is_bot=m.is_bot,
            message_id=m.message_id,
            created_at=m.created_at,
        )


class AppendOut(BaseModel):
    session_key: str
    created: bool = Field(description="False when the platform message id was already stored.")
    message: MessageOut


class WindowOut(BaseModel):
    session_key: str
    messages: list[MessageOut]


class SessionOut(BaseModel):
    key: str
    policy: str
    platform: str
    workspace_id: str
    channel_id: str | None
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    status: str
    version: int
    last_seq: int
    archived_seq: int
    window_start_seq: int
    last_active_at: datetime
    created_at: datetime

    @classmethod
    def of(cls, s: Session) -> SessionOut:
        return cls(
            key=s.key,
            policy=s.policy.value,
            platform=s.platform,
            workspace_id=s.workspace_id,
            channel_id=s.channel_id,
            thread_id=s.thread_id,
            user_id=s.user_id,
            agent_id=s.agent_id,
            status=s.status.value,
            version=s.version,
            last_seq=s.last_seq,
            archived_seq=s.archived_seq,
            window_start_seq=s.window_start_seq,
            last_active_at=s.last_active_at,
            created_at=s.created_at,
        )


class Page(BaseModel, Generic[T]):
    items: list[T]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last one.")


class ResetIn(_In):
    session: SessionRef


class ChatIn(_In):
    session: SessionRef
    text: str = Field(min_length=1, examples=["来週の予定を教えて"])
    author_id: str | None = Field(None, max_length=256)
    author_name: str | None = Field(None, max_length=256)
    message_id: str | None = Field(None, max_length=256)
    system: str | None = Field(None, max_length=100_000)
    max_tokens: int | None = Field(None, ge=1, le=200_000)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    tools: bool = Field(False, description="Offer the memory tools (remember, recall, list, delete) to the model.")


class ChatOut(BaseModel):
    session_key: str
    text: str
    stage: int = Field(description="0: as given, 1: tool results cut, 2: older turns compacted.")
    prompt_tokens: int
    truncated: int
    compacted: bool


class ContextIn(_In):
    session: SessionRef
    query: str | None = Field(None, max_length=100_000, examples=["来週の勉強会は？"])
    budget_tokens: int | None = Field(None, ge=1, le=2_000_000, examples=[8000])
    system: str | None = Field(None, max_length=100_000)
    user: str | None = Field(None, max_length=256)
    language: Literal["ja", "en"] | None = None


# ---------------------------------------------------------------- memories


class RememberIn(_In):
    content: str = Field(examples=["誕生日は3月15日"])
    category: str = Field("general", max_length=64)
    tags: list[str] | None = Field(None, max_length=64)
    metadata: dict[str, Any] | None = None


class RecallIn(_In):
    query: str = Field(examples=["誕生日はいつ？"])
    limit: int | None = Field(None, ge=1, le=100)
    category: str | None = Field(None, max_length=64)
    tags: list[str] | None = Field(None, max_length=64)


class MemoryUpdateIn(_In):
    content: str | None = None
    category: str | None = Field(None, max_length=64)
    tags: list[str] | None = Field(None, max_length=64)
    metadata: dict[str, Any] | None = None


class ErasureOut(BaseModel):
    """The receipt of erasing a user: how many of each kind of record went."""

    workspace_id: str = Field(examples=["1290478288896131072"])
    user_id: str = Field(examples=["7"])
    erased: dict[str, int] = Field(
        description=(
            "How many records of each kind were erased (memories, sessions, messages, summaries, …; "
            "new kinds may appear). All zero when there was nothing (left) to erase."
        ),
        examples=[{"memories": 3, "sessions": 1, "messages": 12, "summaries": 2}],
    )


# ---------------------------------------------------------------- knowledge


IdOrIds = str | list[str] | None


class SearchFiltersIn(_In):
    channel: IdOrIds = Field(None, examples=["42"])
    thread: IdOrIds = None
    author: IdOrIds = None
    source_type: IdOrIds = None
    since: datetime | None = None
    until: datetime | None = None
    k: int | None = Field(None, ge=1, le=100)
    mode: Literal["hybrid", "vector", "lexical"] | None = None
    viewer: str | None = Field(
        None,
        max_length=256,
        description=(
            "Answer for this user: public knowledge plus the private knowledge (DMs, private channels) "
            "they are a member of. Without `viewer` or `public_only`, everything in the key's workspace."
        ),
    )
    public_only: bool = Field(
        False, description="Public knowledge only: for an audience of no one user in particular (a channel)."
    )


class SearchIn(SearchFiltersIn):
    query: str = Field(examples=["リリースが延期された理由"])
    explain: bool = False


class AskIn(SearchFiltersIn):
    question: str = Field(examples=["Why was v0.4.0 postponed?"])
    asker: str | None = Field(None, max_length=256)
    language: Literal["ja", "en"] | None = None


SEARCH_EXAMPLE: dict[str, Any] = {
    "query": "リリースが延期された理由",
    "mode": "hybrid",
    "queries": ["リリースが延期された理由"],
    "hits": [
        {
            "rank": 1,
            "score": 0.032,
            "scores": {"vector": 0.81, "lexical": 7.4, "fused": 0.032, "rerank": None},
            "ranks": None,
            "unit": "turn",
            "line": 0,
            "message_ids": ["1311000000000000001"],
            "quote": "[2025-11-15 13:30] **mika**: v0.4.0 は CI が不安定なので来週に延期します",
            "features": None,
            "chunk_id": 12,
            "source_id": 1,
            "content": "[2025-11-15 13:30] **mika**: v0.4.0 は CI が不安定なので来週に延期します\n"
            "[2025-11-15 13:38] **ren**: 了解です",
            "channel_id": "42",
            "thread_id": None,
            "author_ids": ["7"],
            "started_at": "2025-11-15T13:30:00+00:00",
            "ended_at": "2025-11-15T13:38:00+00:00",
            "source_type": "discord_channel",
            "source_title": "#dev",
            "jump_url": "https://discord.com/channels/1290478288896131072/42/1311000000000000001",
            "location": {"message_ids": ["1311000000000000001", "1311000000000000002"]},
        }
    ],
    "timings_ms": {"embed": 3.1, "search": 4.2, "fetch": 0.7},
    "notes": [],
    "fallback": False,
    "reranked": False,
}
"""A response of ``POST /v1/search`` (the OpenAPI example; it validates as :class:`omoide.api_models.SearchOut`)."""


class StatusOut(BaseModel):
    workspace_id: str
    sessions: dict[str, int]
    unarchived_messages: int
    sources: dict[str, int]
    chunks: int
    embedded: dict[str, int]
    units_missing: int = Field(
        description="Passages whose messages are not indexed on their own yet (run `omoide reindex --units`); "
        "search reads them as whole passages meanwhile."
    )
    unit_vectors_missing: dict[str, int] = Field(
        description="Per embedding model, embedded passages whose messages have no vectors yet (`omoide reindex --units`)."
    )
    reader_vectors_missing: dict[str, int] = Field(
        default_factory=dict,
        description="Per embedding model, embedded passages whose messages the line reader has not read yet "
        "(`omoide reindex --units`); search scores their messages without it meanwhile.",
    )


# ---------------------------------------------------------------- keys


class KeyCreateIn(_In):
    workspace: str = Field(min_length=1, max_length=256, examples=["1290478288896131072"])
    name: str | None = Field(None, max_length=100, examples=["discord-bot"])


class KeyOut(BaseModel):
    id: int
    workspace_id: str
    name: str
    prefix: str
    created_at: datetime
    revoked_at: datetime | None
    active: bool

    @classmethod
    def of(cls, r: ApiKeyRecord) -> KeyOut:
        return cls(
            id=int(r.id),
            workspace_id=r.workspace_id,
            name=r.name,
            prefix=r.prefix,
            created_at=r.created_at,
            revoked_at=r.revoked_at,
            active=r.active,
        )


class KeyCreatedOut(KeyOut):
    token: str = Field(description="The API key. Shown this once: only its SHA-256 is stored.")


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    status: Literal["ready"] = "ready"
    backend: str
    schema_version: int
