"""One conversational turn: load the window, guard the call, store both turns.

A :class:`Conversation` is where a chat's turns live — a database session
(:class:`SessionConversation`) or a JSONL agent transcript
(:class:`TranscriptConversation`). :class:`ChatRunner` runs a turn against either:

1. load the prompt history (the persisted compaction summary, then the turns after it);
2. store the user's message (it was said, whatever happens next);
3. call the model through the :class:`~omoide.context.guard.ContextGuard`;
4. store the answer, and persist a compaction if the guard made one, so the next turn
   starts from the summary instead of compacting the same messages again.

Compaction never deletes: the summarised messages stay in the session store (and go to
long-term memory through the archiver) or in the JSONL file before the compaction record.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from omoide.context import ContextGuard, GuardResult, PromptBudget, prompt_budget
from omoide.context.compaction import Compaction
from omoide.context.guard import DEFAULT_TOOL_RESULT_LIMIT, OnText
from omoide.context.turns import normalise_turns
from omoide.models import Message, SessionKey, ToolResultBlock, ToolUseBlock, summary_turns
from omoide.providers.base import ChatModel, ChatResponse, TokenCounter, ToolSpec
from omoide.sessions import Sessions, validate_message
from omoide.settings import Settings
from omoide.transcripts import TranscriptStore, records_from_messages

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant in a chat. Answer in the language the user writes in "
    "(日本語で話しかけられたら日本語で答えてください). Be concise."
)
"""The system prompt of a turn when the caller gives none (``Memory.chat``, ``build_context``, ``omoide chat``)."""

ToolExecutor = Callable[[ToolUseBlock], Awaitable[ToolResultBlock]]
"""Runs one tool call of the model and returns its result block (errors as ``is_error`` results)."""


class Conversation(Protocol):
    """Where one chat's turns are stored."""

    async def prompt_history(self) -> list[Message]:
        """The history a prompt starts from: the persisted summary pair (if any), then the turns after it."""

    async def add(self, message: Message) -> Message:
        """Store one turn; return it as stored."""

    async def save_compaction(self, compaction: Compaction) -> None:
        """Persist a compaction so later turns start from its summary."""


@dataclass
class TranscriptConversation:
    """A JSONL agent session (seed 002): turns are appended records; a compaction is a record too.

    ``max_bytes``: the largest message stored (``OMOIDE_MAX_MESSAGE_BYTES``, as database sessions
    have it); ``None``: no limit.
    """

    store: TranscriptStore
    agent_id: str
    session_id: str
    max_bytes: int | None = None

    async def prompt_history(self) -> list[Message]:
        return await self.store.load_messages(self.agent_id, self.session_id, apply_compaction=True, positions=True)

    async def add(self, message: Message) -> Message:
        if self.max_bytes is not None:
            validate_message(message, max_bytes=self.max_bytes)
        await self.store.extend(self.agent_id, self.session_id, records_from_messages([message]))
        return message

    async def save_compaction(self, compaction: Compaction) -> None:
        if compaction.through_seq is None:
            return
        await self.store.append_compaction(
            self.agent_id, self.session_id, compaction.summary, replaces_through=compaction.through_seq - 1
        )


@dataclass
class SessionConversation:
    """A database session: turns are session messages; a compaction is stored on the session row.

    The prompt history is the newest ``window`` messages after the persisted summary (and
    after a reset), preceded by the summary pair when there is one.
    """

    sessions: Sessions
    key: SessionKey | str
    window: int | None = None

    async def prompt_history(self) -> list[Message]:
        session = await self.sessions.get_or_create(self.key)
        messages = await self.sessions.history(self.key, window=self.window)
        summary_applies = session.context_summary and session.context_summary_seq > session.window_start_seq
        if not summary_applies:
            return messages
        after = [m for m in messages if m.seq is not None and m.seq > session.context_summary_seq]
        return [*summary_turns(session.context_summary or ""), *after]

    async def add(self, message: Message) -> Message:
        return await self.sessions.append(self.key, message)

    async def save_compaction(self, compaction: Compaction) -> None:
        if compaction.through_seq is None:
            return
        await self.sessions.save_context_summary(self.key, compaction.summary, through_seq=compaction.through_seq)


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """What ``/context`` shows: the prompt's counted size against the model's window."""

    tokens: int
    context_window: int
    prompt_limit: int

    @property
    def fraction(self) -> float:
        return self.tokens / self.context_window if self.context_window else 0.0


class ChatRunner:
    """Runs turns of a conversation with a model, inside its context window.

    Args:
        model: the chat model.
        counter: counts prompt tokens.
        budget: the model's window and the answer reservation.
        system: the system prompt of every turn.
        summariser: the model that writes compaction summaries (default: ``model``).
        tool_result_limit: characters a tool result keeps when the guard cuts it
            (``OMOIDE_TOOL_RESULT_LIMIT``).
        summary_budget: the summariser's budget (see :class:`~omoide.context.guard.ContextGuard`).

    Every model call of a turn — answers and compaction summaries — goes through
    :func:`~omoide.context.calls.budgeted_complete`.
    """

    def __init__(
        self,
        model: ChatModel,
        counter: TokenCounter,
        budget: PromptBudget,
        *,
        system: str | None = None,
        summariser: ChatModel | None = None,
        tool_result_limit: int = DEFAULT_TOOL_RESULT_LIMIT,
        summary_budget: PromptBudget | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self.guard = ContextGuard(
            model,
            counter,
            budget,
            summariser=summariser,
            tool_result_limit=tool_result_limit,
            summary_budget=summary_budget,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        model: ChatModel,
        counter: TokenCounter,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> ChatRunner:
        """A runner for ``model``'s context window (``max_tokens``: the answer reservation) with the
        configured tool result limit; ``system`` defaults to :data:`DEFAULT_SYSTEM_PROMPT`."""
        return cls(
            model,
            counter,
            prompt_budget(model.model_id, settings, max_tokens=max_tokens),
            system=system or DEFAULT_SYSTEM_PROMPT,
            tool_result_limit=settings.tool_result_limit,
        )

    async def turn(
        self,
        conversation: Conversation,
        user: Message,
        *,
        tools: Sequence[ToolSpec] = (),
        execute_tool: ToolExecutor | None = None,
        max_tool_rounds: int = 4,
        temperature: float | None = None,
        top_p: float | None = None,
        on_text: OnText | None = None,
    ) -> GuardResult:
        """Run one turn: store ``user``, call the model, store and return its answer.

        With ``execute_tool``, a response that calls tools is stored, the calls are run
        (their results stored as the next user turn) and the model is called again, at most
        ``max_tool_rounds`` times; the last call offers no tools, so the turn always ends in
        a text answer and never leaves a tool call unanswered in the session.

        A retry — ``user`` carries the platform message id of a message this session already
        holds, within its window — is not a new turn: its stored answer is returned again
        (streamed to ``on_text`` in one piece) without calling the model, or, when the earlier
        try got no answer (the model failed), the turn goes on from the stored messages without
        the message twice in the prompt.
        """
        history = await conversation.prompt_history()
        stored_user = await conversation.add(user)
        messages = [*history, stored_user]
        earlier = _earlier_turn(history, stored_user)
        if earlier is not None:  # a retry of a stored message (the same platform id)
            before, after = earlier
            answer = _answer_of(after)
            if answer is not None:  # answered already: that answer again, no model call
                if on_text is not None:
                    shown = on_text(answer.text)
                    if inspect.isawaitable(shown):
                        await shown
                response = ChatResponse(answer.content, "end_turn", model=answer.author_name or "")
                return GuardResult(response, [*before, stored_user], 0)
            # not answered (the model failed last time): the turn goes on from what is stored
            messages = list(history)
        rounds = max_tool_rounds if execute_tool is not None and tools else 0
        for round_no in range(rounds + 1):
            result = await self.guard.run(
                messages,
                system=self.system,
                tools=tools if round_no < rounds or execute_tool is None else (),
                temperature=temperature,
                top_p=top_p,
                on_text=on_text,
            )
            if result.compaction is not None:
                await conversation.save_compaction(result.compaction)
            answer = await conversation.add(result.response.as_message(author_name=self.model.model_id))
            calls = result.response.tool_calls
            if execute_tool is None or not calls or round_no == rounds:
                return result
            outcomes = [await execute_tool(call) for call in calls]
            tool_turn = await conversation.add(Message("user", tuple(outcomes)))
            messages = [*result.messages, answer, tool_turn]
        raise AssertionError("unreachable: the last round returns")  # pragma: no cover

    async def compact(self, conversation: Conversation) -> Compaction | None:
        """``/compact``: summarise the older half now and persist it; ``None`` if there is too little history."""
        turns = normalise_turns(await conversation.prompt_history())
        done = await self.guard.compact(turns)
        if done is None:
            return None
        _, compaction = done
        await conversation.save_compaction(compaction)
        return compaction

    async def usage(self, conversation: Conversation) -> ContextUsage:
        """The size of the prompt the next turn would start from."""
        turns = normalise_turns(await conversation.prompt_history())
        tokens = self.guard.count(turns, system=self.system)
        budget = self.guard.budget
        return ContextUsage(tokens, budget.context_window, budget.prompt_limit)


def _earlier_turn(history: Sequence[Message], stored: Message) -> tuple[list[Message], list[Message]] | None:
    """When ``stored`` (the turn's user message as the session stored it) was already in the
    prompt history — a retry with the same platform message id — the messages before it and
    after it; else ``None`` (a new message, or one too old for the window: a turn as usual)."""
    if stored.seq is None:
        return None
    for i, message in enumerate(history):
        if message.seq == stored.seq:
            return list(history[:i]), list(history[i + 1 :])
    return None


def _answer_of(after: Sequence[Message]) -> Message | None:
    """The answer that ended the turn of the messages ``after`` a user message: the last
    assistant message without tool calls before the next user message of text (tool results
    travel in user turns); ``None`` when the turn never got one."""
    answer: Message | None = None
    for message in after:
        if message.role == "user" and not all(isinstance(b, ToolResultBlock) for b in message.content):
            break
        if message.role == "assistant":
            answer = None if any(isinstance(b, ToolUseBlock) for b in message.content) else message
    return answer


__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "ChatRunner",
    "ContextUsage",
    "Conversation",
    "SessionConversation",
    "ToolExecutor",
    "TranscriptConversation",
]
