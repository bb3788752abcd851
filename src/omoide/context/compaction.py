"""Stage 2 of the guard: replace the oldest part of a history with a summary.

As in seed 002: the oldest ~50% of the turns are summarised by the chat model and
replaced by a user turn ``[Previous conversation summary]\\n…`` and an assistant turn
``Understood, I have the context.``; at least the newest ``max(4, 20%)`` turns are kept
verbatim. Unlike the seed's sketch, the cut is moved back to the nearest plain user
turn, so a ``tool_use`` is never separated from its ``tool_result`` and the result still
alternates user/assistant.

Compaction only changes the *prompt*. The replaced messages stay in the session store
(and reach long-term memory through the archiver); :class:`Compaction` records which
stored messages the summary covers (``through_seq``) so the caller can persist it and
the next turn does not summarise the same messages again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from omoide.context.budget import PromptBudget
from omoide.context.calls import budgeted_complete
from omoide.context.turns import message_text_for_summary
from omoide.errors import ContextOverflow
from omoide.models import SUMMARY_ACK, SUMMARY_PREFIX, Message, ToolResultBlock, is_summary_turn, summary_turns
from omoide.providers.base import ChatModel, TokenCounter

SUMMARISER_SYSTEM = (
    "You are a conversation summarizer. Be concise and factual. "
    "Write the summary in the language the conversation is in (日本語の会話は日本語で要約してください)."
)
SUMMARY_REQUEST = (
    "Summarise the conversation below so that the summary can replace it in a chat model's context. "
    "Keep who said what, names, facts, numbers, dates, decisions, promises and open questions. "
    "Do not add anything that is not in the conversation.\n\n<conversation>\n{conversation}\n</conversation>"
)
MAX_SUMMARY_INPUT_CHARS = 200_000
MAX_SUMMARY_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Compaction:
    """What a compaction did.

    Attributes:
        summary: the summary text (without the prefix).
        replaced_turns: how many turns of the prompt it replaced.
        through_seq: the newest stored message ``seq`` the summary covers (``None`` if it
            covered no stored message, e.g. only an earlier summary).
    """

    summary: str
    replaced_turns: int
    through_seq: int | None


def split_index(turns: Sequence[Message]) -> int | None:
    """Where the kept part of ``turns`` begins, or ``None`` when nothing can be compacted.

    ``turns`` must already alternate (see :func:`omoide.context.turns.normalise_turns`).
    """
    n = len(turns)
    keep = max(4, int(n * 0.2))
    compress = min(max(2, int(n * 0.5)), n - keep)
    for i in range(compress, 0, -1):
        turn = turns[i]
        if turn.role == "user" and not any(isinstance(b, ToolResultBlock) for b in turn.content):
            if i == 2 and is_summary_turn(turns[0]):
                continue  # would only re-summarise the previous summary pair
            return i
    return None


def _counter(counter: TokenCounter | None) -> TokenCounter:
    if counter is not None:
        return counter
    from omoide.providers.tokens import get_token_counter

    return get_token_counter()


async def _summarise_once(
    messages: Sequence[Message],
    model: ChatModel,
    *,
    max_tokens: int,
    counter: TokenCounter | None,
    budget: PromptBudget | None,
) -> str:
    conversation = "\n\n".join(message_text_for_summary(m) for m in messages)
    if len(conversation) > MAX_SUMMARY_INPUT_CHARS:  # keep the newest part: the oldest is least relevant
        conversation = "…\n" + conversation[-MAX_SUMMARY_INPUT_CHARS:]
    call = await budgeted_complete(
        model,
        _counter(counter),
        budget,
        messages=[Message.user(SUMMARY_REQUEST.format(conversation=conversation))],
        system=SUMMARISER_SYSTEM,
        max_tokens=max_tokens,
        temperature=0.0,
        what="the compaction summary prompt",
    )
    text = call.text.strip()
    if not text:
        raise ContextOverflow("the summariser returned an empty summary; cannot compact the history")
    return text


async def summarise(
    messages: Sequence[Message],
    model: ChatModel,
    *,
    max_tokens: int = 2048,
    counter: TokenCounter | None = None,
    budget: PromptBudget | None = None,
    _depth: int = 0,
) -> str:
    """Ask ``model`` for a summary of ``messages`` (plain text in, plain text out).

    The call is budgeted (:func:`~omoide.context.calls.budgeted_complete`): a request that
    does not fit ``budget`` (default: ``model``'s window from the built-in table) is never
    sent. When the messages are too long for the summariser, the first half is summarised
    first and its summary is summarised again together with the second half.

    Raises:
        ContextOverflow: even a single message is too long to summarise.
    """
    try:
        return await _summarise_once(messages, model, max_tokens=max_tokens, counter=counter, budget=budget)
    except ContextOverflow:
        if len(messages) < 2 or _depth >= MAX_SUMMARY_DEPTH:
            raise
    middle = len(messages) // 2
    first = await summarise(
        messages[:middle], model, max_tokens=max_tokens, counter=counter, budget=budget, _depth=_depth + 1
    )
    rest = [Message.user(SUMMARY_PREFIX + first), *messages[middle:]]
    return await summarise(rest, model, max_tokens=max_tokens, counter=counter, budget=budget, _depth=_depth + 1)


async def compact(
    turns: Sequence[Message],
    model: ChatModel,
    *,
    max_summary_tokens: int = 2048,
    counter: TokenCounter | None = None,
    budget: PromptBudget | None = None,
) -> tuple[list[Message], Compaction] | None:
    """Summarise the oldest part of ``turns``; ``None`` when there is nothing to compact.

    ``counter`` and ``budget`` bound the summariser's own call (see :func:`summarise`).
    """
    index = split_index(turns)
    if index is None:
        return None
    old, kept = list(turns[:index]), list(turns[index:])
    summary = await summarise(old, model, max_tokens=max_summary_tokens, counter=counter, budget=budget)
    seqs = [m.seq for m in old if m.seq is not None]
    record = Compaction(summary=summary, replaced_turns=index, through_seq=max(seqs) if seqs else None)
    return [*summary_turns(summary), *kept], record


__all__ = [
    "SUMMARY_ACK",
    "SUMMARY_PREFIX",
    "Compaction",
    "compact",
    "is_summary_turn",
    "split_index",
    "summarise",
    "summary_turns",
]
