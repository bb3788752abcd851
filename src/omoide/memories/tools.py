"""Memory tools for LLMs: remember, recall, list and delete, run for the HOST's user.

The tool schemas have no user or workspace field: the host (a bot, the HTTP API) knows
who is talking and binds :class:`MemoryToolExecutor` to that user and workspace. Ids a
model puts in a call anyway (``user_id``, ``workspace``…) are ignored, so a prompt
injection cannot reach another user's memories. A failing call becomes an ``is_error``
tool result the model can read and recover from, never an exception in the turn.

:data:`MEMORY_TOOLS` is the provider-neutral form (what ``Memory.chat(tools=True)`` sends);
:func:`anthropic_tools` and :func:`openai_tools` give the same tools in each provider's
own JSON shape for callers that drive an SDK directly.
"""

from __future__ import annotations

import json
from typing import Any

from omoide.errors import InvalidInput, OmoideError
from omoide.memories.service import MemoryService
from omoide.models import Message, Session, ToolResultBlock, ToolUseBlock
from omoide.providers.base import ToolSpec

_TAGS = {"type": "array", "items": {"type": "string"}, "description": "Optional labels."}

MEMORY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="remember",
        description=(
            "Save something the user asked you to remember about them (覚えておいて), e.g. a birthday, a "
            "preference or a plan. Write it as a short self-contained statement. A near-identical memory "
            "is updated instead of duplicated."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "What to remember, as a statement."},
                "category": {"type": "string", "description": "e.g. general, preference, schedule, profile."},
                "tags": _TAGS,
            },
            "required": ["content"],
        },
    ),
    ToolSpec(
        name="recall",
        description=(
            "Search what this user asked you to remember (思い出す). Use it before answering questions about "
            "the user's own facts, preferences or plans."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "At most this many."},
                "category": {"type": "string"},
            },
            "required": ["query"],
        },
    ),
    ToolSpec(
        name="list_memories",
        description="List the user's memories, newest first (one page).",
        input_schema={
            "type": "object",
            "properties": {
                "category": {"type": "string"},
                "page": {"type": "integer", "minimum": 1},
            },
        },
    ),
    ToolSpec(
        name="delete_memory",
        description="Delete one of the user's memories by its id (from recall or list_memories), when they ask.",
        input_schema={
            "type": "object",
            "properties": {"memory_id": {"type": "integer", "minimum": 1}},
            "required": ["memory_id"],
        },
    ),
)


def anthropic_tools() -> list[dict[str, Any]]:
    """The memory tools in Anthropic Messages API form (``tools=[…]``)."""
    return [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)} for t in MEMORY_TOOLS]


def openai_tools() -> list[dict[str, Any]]:
    """The memory tools in OpenAI Chat Completions form (``tools=[{"type": "function", …}]``)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)},
        }
        for t in MEMORY_TOOLS
    ]


class MemoryToolExecutor:
    """Runs the model's memory tool calls for one user in one workspace.

    Args:
        service: the memory service.
        workspace / user: whose memories — fixed by the host, never taken from the call.

    Example:
        >>> run = MemoryToolExecutor(mem.memories, workspace="g1", user="u1")     # doctest: +SKIP
        >>> result = await run(ToolUseBlock("t1", "recall", {"query": "誕生日"}))  # doctest: +SKIP
    """

    def __init__(self, service: MemoryService, *, workspace: str, user: str) -> None:
        self.service = service
        self.workspace = workspace
        self.user = user

    @classmethod
    def for_message(cls, service: MemoryService, session: Session, message: Message) -> MemoryToolExecutor:
        """The executor of a chat turn: the memories of ``message``'s author (else the session's
        user) in the session's workspace.

        Raises:
            InvalidInput: neither the author nor the session's user is known.
        """
        owner = message.author_id or session.user_id
        if not owner:
            raise InvalidInput(
                "memory tools need to know whose memories to use: give the message an author_id "
                "or use a per-user session key"
            )
        return cls(service, workspace=session.workspace_id, user=owner)

    async def __call__(self, call: ToolUseBlock) -> ToolResultBlock:
        args = dict(call.input)
        try:
            payload = await self._run(call.name, args)
        except OmoideError as exc:
            return ToolResultBlock(
                call.id, json.dumps({"error": exc.code, "message": exc.message}, ensure_ascii=False), is_error=True
            )
        except (TypeError, ValueError) as exc:
            return ToolResultBlock(call.id, json.dumps({"error": "BAD_ARGUMENTS", "message": str(exc)}), is_error=True)
        return ToolResultBlock(call.id, json.dumps(payload, ensure_ascii=False))

    async def _run(self, name: str, args: dict[str, Any]) -> Any:
        ws, user = self.workspace, self.user
        if name == "remember":
            done = await self.service.remember(
                ws,
                user,
                args.get("content", ""),
                category=args.get("category") or "general",
                tags=args.get("tags"),
                actor="tool:remember",
            )
            return {"id": int(done.memory.id), "content": done.memory.content, "updated": done.updated}
        if name == "recall":
            hits = await self.service.recall(
                ws, user, args.get("query", ""), limit=args.get("limit"), category=args.get("category")
            )
            return [{"id": int(h.memory.id), "content": h.memory.content, "category": h.memory.category} for h in hits]
        if name == "list_memories":
            page = await self.service.list(ws, user, category=args.get("category"), page=args.get("page") or 1)
            return [{"id": int(m.id), "content": m.content, "category": m.category} for m in page]
        if name == "delete_memory":
            memory_id = args.get("memory_id")
            if isinstance(memory_id, bool) or not isinstance(memory_id, int):
                raise ValueError(f"memory_id must be an integer, got {memory_id!r}")
            await self.service.delete(ws, user, memory_id, actor="tool:delete_memory")
            return {"deleted": memory_id}
        raise ValueError(f"unknown tool {name!r}; the memory tools are " + ", ".join(t.name for t in MEMORY_TOOLS))


__all__ = ["MEMORY_TOOLS", "MemoryToolExecutor", "anthropic_tools", "openai_tools"]
