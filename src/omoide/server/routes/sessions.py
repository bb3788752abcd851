"""Short-term memory: append, window, reset, list; a chat turn; build_context."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.exceptions import RequestValidationError

from omoide.errors import SessionNotFound
from omoide.keys import parse_session_key
from omoide.models import ContentBlock, Message, SessionKey, SessionStatus, blocks_from_json
from omoide.server.auth import KeyDep, MemoryDep
from omoide.server.jsonbody import StrictJsonRoute
from omoide.server.problems import PROBLEM_RESPONSES
from omoide.server.schemas import (
    AppendIn,
    AppendOut,
    ChatIn,
    ChatOut,
    ContextIn,
    MessageOut,
    Page,
    ResetIn,
    SessionOut,
    SessionRef,
    WindowOut,
    key_with_parts,
)
from omoide.sessions import validate_message

router = APIRouter(
    prefix="/v1/sessions", tags=["sessions"], responses={**PROBLEM_RESPONSES}, route_class=StrictJsonRoute
)


def resolve(memory: Any, ref: SessionRef, workspace: str) -> SessionKey:
    """The session key in the caller's workspace; a key of another workspace is "not found"."""
    if ref.key is not None:
        key = parse_session_key(ref.key)
        if key.workspace != workspace:
            raise SessionNotFound(f"no session with key {ref.key!r}")
        return key
    return memory.session_key(  # type: ignore[no-any-return]
        platform=ref.platform,
        workspace=workspace,
        channel=ref.channel,
        thread=ref.thread,
        user=ref.user,
        agent=ref.agent,
        policy=ref.policy,
    )


def _message(body: AppendIn) -> Message:
    blocks: tuple[ContentBlock, ...]
    if body.content is not None:
        blocks = blocks_from_json([b.model_dump(exclude_none=True) for b in body.content])
    else:
        from omoide.models import TextBlock

        blocks = (TextBlock(body.text or ""),)
    extra: dict[str, Any] = {}
    if body.created_at is not None:
        extra["created_at"] = body.created_at
    return Message(
        body.role,
        blocks,
        author_id=body.author_id,
        author_name=body.author_name,
        is_bot=body.is_bot if body.is_bot is not None else body.role == "assistant",
        message_id=body.message_id,
        **extra,
    )


@router.post("/messages", summary="Append a message to a session", status_code=201)
async def append(body: AppendIn, memory: MemoryDep, key: KeyDep) -> AppendOut:
    """Store one message (idempotent on `message_id`); the session is created on first use."""
    session_key = resolve(memory, body.session, key.workspace_id)
    message = _message(body)
    # checked before the visibility changes: a refused message changes nothing (append checks it again)
    validate_message(message, max_bytes=memory.settings.max_message_bytes)
    if body.private is not None:
        await memory.set_visibility(session_key, private=body.private, members=body.members)
    stored, created = await memory.sessions.append_checked(session_key, message)
    return AppendOut(session_key=session_key.value, created=created, message=MessageOut.of(stored))


@router.get("/window", summary="The conversation window of a session")
async def window(
    memory: MemoryDep,
    key: KeyDep,
    session_key: Annotated[str | None, Query(alias="key", max_length=2048)] = None,
    platform: Annotated[str | None, Query(min_length=1, max_length=256, description="Default: api.")] = None,
    channel: Annotated[str | None, Query(max_length=256)] = None,
    thread: Annotated[str | None, Query(max_length=256)] = None,
    user: Annotated[str | None, Query(max_length=256)] = None,
    agent: Annotated[str | None, Query(max_length=256)] = None,
    policy: Literal["user_channel", "channel", "thread", "agent"] | None = None,
    size: Annotated[int | None, Query(alias="window", ge=1, le=10_000)] = None,
) -> WindowOut:
    """The newest messages (default `OMOIDE_SESSION_WINDOW`), oldest first; empty for an unknown session.

    Example: `GET /v1/sessions/window?platform=discord&channel=42&user=7&window=20`
    """
    given = {"channel": channel, "thread": thread, "user": user, "agent": agent, "policy": policy}
    parts = {name: value for name, value in {"platform": platform, **given}.items() if value is not None}
    if session_key is not None and parts:
        raise RequestValidationError(
            [{"loc": ("query", "key"), "msg": key_with_parts(list(parts)), "type": "value_error"}]
        )
    ref = SessionRef.model_validate({"key": session_key, **parts})
    resolved = resolve(memory, ref, key.workspace_id)
    messages = await memory.history(resolved, window=size)
    return WindowOut(session_key=resolved.value, messages=[MessageOut.of(m) for m in messages])


@router.post("/reset", summary="Start a fresh conversation in a session")
async def reset(body: ResetIn, memory: MemoryDep, key: KeyDep) -> SessionOut:
    """The window becomes empty; stored messages stay until they are archived."""
    return SessionOut.of(await memory.reset(resolve(memory, body.session, key.workspace_id)))


@router.get("", summary="List the workspace's sessions")
async def list_sessions(
    memory: MemoryDep,
    key: KeyDep,
    status: SessionStatus | None = None,
    platform: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    channel_id: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    user_id: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> Page[SessionOut]:
    """Most recently active first; `platform`, `channel_id`, `user_id` and `status` filter (each an equality)."""
    found = await memory.sessions.list_sessions(
        workspace=key.workspace_id,
        status=status,
        platform=platform,
        channel=channel_id,
        user=user_id,
        limit=limit + 1,
        offset=offset,
    )
    return Page[SessionOut](
        items=[SessionOut.of(s) for s in found[:limit]],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(found) > limit else None,
    )


@router.post("/chat", summary="One chat turn with session memory")
async def chat(body: ChatIn, memory: MemoryDep, key: KeyDep) -> ChatOut:
    """Window → context guard → model → both turns stored (`Memory.chat`)."""
    session_key = resolve(memory, body.session, key.workspace_id)
    message = Message.user(
        body.text, author_id=body.author_id, author_name=body.author_name, message_id=body.message_id
    )
    result = await memory.chat(
        session_key,
        message,
        system=body.system,
        max_tokens=body.max_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        tools=body.tools,
    )
    return ChatOut(
        session_key=session_key.value,
        text=result.text,
        stage=result.stage,
        prompt_tokens=result.prompt_tokens,
        truncated=result.truncated,
        compacted=result.compaction is not None,
    )


@router.post("/context", summary="What a bot should send next (build_context)")
async def build_context(body: ContextIn, memory: MemoryDep, key: KeyDep) -> dict[str, Any]:
    """Summaries, the user's memories, knowledge and the window, fitted to `budget_tokens`."""
    built = await memory.build_context(
        resolve(memory, body.session, key.workspace_id),
        body.query,
        budget_tokens=body.budget_tokens,
        system=body.system,
        user=body.user,
        language=body.language,
    )
    return built.as_dict()
