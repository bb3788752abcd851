"""The MCP tools over one :class:`omoide.Memory`: remember, recall, list_memories,
forget_memory, forget_me, search, ask and build_context.

Whose data a call touches is never an argument: a :class:`McpScope` (the workspace, and
the user whose memories these are) comes from the server's configuration on stdio, or
from the authenticated API key on HTTP (see :mod:`omoide.mcp.transport`). The tool
schemas have no workspace or user field, and anything a model adds to its arguments
anyway is ignored — the same rule as the memory tools of :mod:`omoide.memories.tools`.

``forget_me`` erases everything stored about the scope's user in its workspace
(``Memory.forget_user``): it is annotated destructive, and it refuses unless called with
``confirm: true`` — the model must ask the user first. Erasing is idempotent.

``search`` and ``ask`` take the scope's user as the viewer (public knowledge plus the
private knowledge that user is a member of; see ``docs/search.md``, "Visibility"); a
server without a user sees the whole workspace, as its operator does.

Every tool calls ``Memory`` and renders the result (:mod:`omoide.mcp.results`); an
:class:`~omoide.errors.OmoideError` becomes a tool error reading ``CODE: message``, and
arguments that fail the input schema are a tool error naming the field — never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field, StrictBool

from omoide import __version__
from omoide.api_models import RememberOut
from omoide.errors import OmoideError, SessionNotFound
from omoide.mcp.results import (
    AskOut,
    BuildContextOut,
    ForgetMeOut,
    ForgetOut,
    MemoryPageOut,
    RecalledMemoriesOut,
    SearchOut,
    render_answer,
    render_context,
    render_erasure,
    render_page,
    render_recall,
    render_remember,
    render_search,
    result,
)
from omoide.models import KeyPolicy
from omoide.search.results import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from omoide.engine import Memory
    from omoide.models import SessionKey

SERVER_NAME = "omoide"
INSTRUCTIONS = (
    "omoide is a memory engine. Use remember/recall/list_memories/forget_memory for what the user asks you "
    "to remember about them (覚えておいて / 思い出して); forget_me only when the user asks you to erase "
    "everything you keep about them, after they confirm; search and ask for what was said in the workspace's "
    "chat history (ask answers with [#n] citations and jump links); build_context for the assembled context "
    "a bot would send for a question. Every call is scoped to this server's workspace and user."
)
MAX_K = 50
MAX_ID = 2**63 - 1
"""The largest id SQL stores (BIGINT); a larger memory id names no memory and is refused by the schema."""


@dataclass(frozen=True, slots=True)
class McpScope:
    """Whose data the tools use: ``workspace``, and ``user`` for memories (``None``: memory tools refuse)."""

    workspace: str
    user: str | None = None


ScopeResolver = Callable[[Context[Any, Any]], McpScope]
"""Finds the scope of one tool call from its request context (a fixed scope on stdio)."""


@contextmanager
def _tool_errors() -> Iterator[None]:
    """omoide's typed errors → a tool error the model can read: ``CODE: message``."""
    try:
        yield
    except OmoideError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from exc


def _scope(
    where: McpScope,
    channel: str | list[str] | None,
    thread: str | list[str] | None,
    author: str | list[str] | None,
    since: datetime | None,
    until: datetime | None,
) -> dict[str, Any]:
    """Search/ask keyword arguments: the server's workspace and viewer (a user's server sees
    public knowledge plus their own private knowledge) and the tool's filters."""
    return {
        "workspace": where.workspace,
        "viewer": where.user,
        "channel": _ids(channel),
        "thread": _ids(thread),
        "author": _ids(author),
        "since": since,
        "until": until,
    }


_GIVE_A_USER = "start it with `omoide mcp --user ID` (or OMOIDE_MCP_USER), or send the X-Omoide-User header over HTTP"


def _memory_user(scope: McpScope) -> str:
    if scope.user is None:
        raise ToolError(f"NO_USER: this server has no user for memories: {_GIVE_A_USER}")
    return scope.user


def _own_session(mem: Memory, scope: McpScope) -> SessionKey:
    """The agent session the tools keep for the scope's user (``mcp:<workspace>:a=<user>``)."""
    return mem.session_key(platform="mcp", workspace=scope.workspace, agent=scope.user or "default", policy="agent")


async def _may_read(mem: Memory, key: SessionKey, scope: McpScope) -> None:
    """Refuse a private session (a private channel, a group DM: shared under a ``channel`` or
    ``thread`` key policy) whose members do not include the scope's user — the visibility
    rule search and ask apply to private knowledge. A server without a user sees everything."""
    if scope.user is None:
        return
    try:
        session = await mem.sessions.get(key)
    except SessionNotFound:
        return
    if session.private and scope.user not in session.members and session.user_id != scope.user:
        raise ToolError(
            f"NOT_FOUND: no conversation in this channel that user {scope.user} may read; "
            "build_context shows a private channel only to its members"
        )


def _ids(value: str | list[str] | None) -> list[str] | None:
    if value is None or value == []:
        return None
    return [value] if isinstance(value, str) else value


ChannelFilter = Annotated[
    str | list[str] | None, Field(description="Only these channels: one channel id or a list; omit for all.")
]
ThreadFilter = Annotated[str | list[str] | None, Field(description="Only these threads: one thread id or a list.")]
AuthorFilter = Annotated[
    str | list[str] | None, Field(description="Only passages with these authors: one user id or a list.")
]
Since = Annotated[
    datetime | None,
    Field(
        description="Only passages overlapping this time or later (ISO 8601, e.g. 2025-11-08T00:00:00Z; naive = UTC)."
    ),
]
Until = Annotated[datetime | None, Field(description="Only passages overlapping this time or earlier (ISO 8601).")]
TopK = Annotated[int | None, Field(ge=1, le=MAX_K, description="How many passages (default 5).")]
Mode = Annotated[
    Literal["hybrid", "vector", "lexical"] | None,
    Field(description="hybrid (default: vector + full text, fused), vector or lexical."),
]
Category = Annotated[
    str | None,
    Field(description="A short label: general, preference, schedule, profile… (letters, digits, - _ . :)."),
]
Tags = Annotated[list[str] | None, Field(description="Optional labels (at most 32).")]


def build_server(
    mem: Memory,
    scope: McpScope | ScopeResolver,
    **server_options: Any,
) -> MCPServer[Any]:
    """The MCP server with omoide's tools, every call on ``mem`` within ``scope``.

    Args:
        mem: an open ``Memory``.
        scope: a fixed :class:`McpScope` (stdio), or a function finding it from each call's
            request context (HTTP: from the API key and the ``X-Omoide-User`` header).
        **server_options: passed to :class:`mcp.server.mcpserver.MCPServer` (``auth``,
            ``token_verifier``, …).
    """
    resolve: ScopeResolver = (lambda _ctx: scope) if isinstance(scope, McpScope) else scope
    server_options.setdefault("log_level", mem.settings.log_level)
    server: MCPServer[Any] = MCPServer(
        SERVER_NAME,
        title="omoide (思い出)",
        instructions=INSTRUCTIONS,
        version=__version__,
        **server_options,
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    # ---------------------------------------------------------------- memories

    @server.tool(
        description=(
            "Save something the user asked you to remember about them (覚えておいて): a birthday, a preference, "
            "a plan. Write it as a short self-contained statement. A near-identical memory of theirs is updated "
            "instead of duplicated (the result says so)."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    )
    async def remember(
        content: Annotated[str, Field(description="What to remember, as a statement (e.g. '誕生日は3月15日').")],
        ctx: Context[Any, Any],
        category: Annotated[
            str, Field(description="A short label: general, preference, schedule, profile…")
        ] = "general",
        tags: Tags = None,
    ) -> Annotated[CallToolResult, RememberOut]:
        where = resolve(ctx)
        with _tool_errors():
            done = await mem.remember(
                content,
                workspace=where.workspace,
                user=_memory_user(where),
                category=category,
                tags=tags,
                actor="mcp",
            )
        return render_remember(done)

    @server.tool(
        description=(
            "Search what the user asked you to remember (思い出す): vector + full-text search over their own "
            "memories, best match first. Use it before answering about the user's own facts, preferences or plans."
        ),
        annotations=read_only,
    )
    async def recall(
        query: Annotated[str, Field(max_length=MAX_QUERY_CHARS, description="What to look for, in any language.")],
        ctx: Context[Any, Any],
        limit: Annotated[int | None, Field(ge=1, le=MAX_K, description="At most this many (default 5).")] = None,
        category: Category = None,
        tags: Annotated[list[str] | None, Field(description="Only memories with every one of these tags.")] = None,
    ) -> Annotated[CallToolResult, RecalledMemoriesOut]:
        where = resolve(ctx)
        with _tool_errors():
            hits = await mem.recall(
                query, workspace=where.workspace, user=_memory_user(where), limit=limit, category=category, tags=tags
            )
        return render_recall(hits)

    @server.tool(description="List the user's memories, newest first, one page at a time.", annotations=read_only)
    async def list_memories(
        ctx: Context[Any, Any],
        category: Category = None,
        page: Annotated[int, Field(ge=1, le=1_000_000, description="Page, from 1.")] = 1,
        page_size: Annotated[int, Field(ge=1, le=200, description="Memories per page.")] = 20,
    ) -> Annotated[CallToolResult, MemoryPageOut]:
        where = resolve(ctx)
        with _tool_errors():
            memories = await mem.memories.list(
                where.workspace, _memory_user(where), category=category, page=page, page_size=page_size
            )
        return render_page(memories, page=page, page_size=page_size)

    @server.tool(
        description="Delete one of the user's memories by its id (from recall or list_memories), when they ask you to forget it.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    )
    async def forget_memory(
        memory_id: Annotated[int, Field(ge=1, le=MAX_ID, description="The memory's id.")],
        ctx: Context[Any, Any],
    ) -> Annotated[CallToolResult, ForgetOut]:
        where = resolve(ctx)
        with _tool_errors():
            await mem.memories.delete(where.workspace, _memory_user(where), memory_id, actor="mcp")
        return result(f"Deleted memory {memory_id}.", ForgetOut(deleted=memory_id))

    @server.tool(
        description=(
            "Erase EVERYTHING stored about the user in this workspace (私のデータを全部消して): their memories, "
            "their conversation sessions and messages, their lines in long-term knowledge, summaries drawn "
            "from them and their transcripts. Cannot be undone. Use it only when the user asks for it, and "
            "first ask them to confirm; then call it with confirm=true. Returns how many records of each "
            "kind were erased."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def forget_me(
        ctx: Context[Any, Any],
        # strict: the JSON boolean true, never a string or number coerced into consent ("yes", 1)
        confirm: Annotated[
            StrictBool, Field(description="true only after the user has explicitly confirmed the erasure.")
        ] = False,
    ) -> Annotated[CallToolResult, ForgetMeOut]:
        where = resolve(ctx)
        user = _memory_user(where)
        if confirm is not True:
            raise ToolError(
                "CONFIRMATION_REQUIRED: nothing was erased. This erases everything stored about the user and "
                "cannot be undone: ask the user to confirm first, then call forget_me with confirm=true"
            )
        with _tool_errors():
            erased = (await mem.forget_user(workspace=where.workspace, user=user)).as_dict()
            # build_context's own session is keyed by the user, not owned by them: forget_user leaves it
            if await mem.sessions.delete(_own_session(mem, where)):
                erased["sessions"] += 1
        return render_erasure(erased, workspace=where.workspace, user=user)

    # ---------------------------------------------------------------- knowledge

    @server.tool(
        description=(
            "Search the workspace's long-term memory — archived conversations and imported chat history "
            "(Discord, Slack) — with hybrid vector + full-text search. Returns passages with their channel, "
            "time and a jump URL to the original messages."
        ),
        annotations=read_only,
    )
    async def search(
        query: Annotated[
            str,
            Field(
                max_length=MAX_QUERY_CHARS, description="What to look for, in any language (Japanese is first-class)."
            ),
        ],
        ctx: Context[Any, Any],
        channel: ChannelFilter = None,
        thread: ThreadFilter = None,
        author: AuthorFilter = None,
        since: Since = None,
        until: Until = None,
        k: TopK = None,
        mode: Mode = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        where = resolve(ctx)
        with _tool_errors():
            found = await mem.search(
                query,
                k=k,
                mode=mode,
                **_scope(where, channel, thread, author, since, until),
            )
        return render_search(found)

    @server.tool(
        description=(
            "Answer a question from the workspace's chat history, citing its evidence as [#n] with jump URLs "
            "to the original messages. Says so when nothing relevant was found."
        ),
        annotations=read_only,
    )
    async def ask(
        question: Annotated[str, Field(max_length=MAX_QUERY_CHARS, description="The question, in any language.")],
        ctx: Context[Any, Any],
        channel: ChannelFilter = None,
        thread: ThreadFilter = None,
        author: AuthorFilter = None,
        since: Since = None,
        until: Until = None,
        k: Annotated[int | None, Field(ge=1, le=MAX_K, description="Evidence passages (default 5).")] = None,
        language: Annotated[
            Literal["ja", "en"] | None, Field(description="Answer language: ja or en (default: the server's).")
        ] = None,
    ) -> Annotated[CallToolResult, AskOut]:
        where = resolve(ctx)
        with _tool_errors():
            answer = await mem.ask(
                question,
                asker=where.user,
                k=k,
                language=language,
                **_scope(where, channel, thread, author, since, until),
            )
        return render_answer(answer)

    @server.tool(
        description=(
            "Assemble the context a bot would send for the next turn, within a token budget: the user's "
            "recalled memories, the workspace's and channel's summaries, relevant long-term knowledge and the "
            "recent conversation window. Without a channel it uses this user's own agent session."
        ),
        annotations=ToolAnnotations(open_world_hint=False),
    )
    async def build_context(
        ctx: Context[Any, Any],
        query: Annotated[
            str | None,
            Field(
                max_length=MAX_QUERY_CHARS,
                description="What to look up (default: the newest user message in the window).",
            ),
        ] = None,
        channel: Annotated[
            str | None, Field(description="A channel id: use the session a bot keeps there for this user.")
        ] = None,
        thread: Annotated[str | None, Field(description="A thread id in that channel.")] = None,
        platform: Annotated[
            str, Field(description="The platform of the channel's sessions: discord, slack…")
        ] = "discord",
        budget_tokens: Annotated[
            int | None, Field(ge=1, le=10_000_000, description="Most prompt tokens (default: the chat model's).")
        ] = None,
    ) -> Annotated[CallToolResult, BuildContextOut]:
        where = resolve(ctx)
        with _tool_errors():
            if channel is None:
                if thread is not None:
                    raise ToolError("INVALID_INPUT: a thread needs its channel: give channel too")
                key = _own_session(mem, where)
            else:
                if where.user is None and mem.settings.session_key_policy is KeyPolicy.USER_CHANNEL:
                    raise ToolError(
                        "NO_USER: a channel's sessions are per user (OMOIDE_SESSION_KEY_POLICY=user_channel) and "
                        f"this server has no user: omit channel to use the server's own session, or {_GIVE_A_USER}"
                    )
                key = mem.session_key(
                    platform=platform, workspace=where.workspace, channel=channel, thread=thread, user=where.user
                )
                await _may_read(mem, key, where)
            built = await mem.build_context(key, query, budget_tokens=budget_tokens, user=where.user)
        return render_context(built, session_key=key.value)

    return server


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "McpScope", "ScopeResolver", "build_server"]
