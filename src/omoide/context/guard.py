"""ContextGuard: every chat call, kept inside the context window (seed 002, made robust).

Stages:

0. The normal call. The prompt is counted first (system + tools + messages); if it is
   already over the budget, the guard goes straight to stage 1 instead of paying for a
   round trip that must fail.
1. Oversized tool results are cut to their head and tail with a marker saying how much
   was cut (limit: ``tool_result_limit`` characters).
2. The oldest ~50% of the turns are summarised and replaced by a summary turn and an
   acknowledgement (:mod:`omoide.context.compaction`), repeated while the count is still
   over the budget and there is something left to compact.

When the provider reports an overflow that our count did not predict (its tokenizer
differs from ours), the guard lowers its own limit by the provider's figures and goes on
to the next stage, instead of retrying a prompt of the same size.
3. :class:`~omoide.errors.ContextOverflow` with the counts.

Every call goes through :func:`omoide.context.calls.budgeted_complete` (the one place
prompts are counted and checked against the budget); stages 1 and 2 are its trim
strategy, and each compaction summary is itself a budgeted call.

Only a provider's typed ``ContextOverflow`` moves the guard to the next stage; every
other error (a bad key, a 500, a rate limit) propagates unchanged. (Seed 002 treated any
error whose text contained "context" or "token" as an overflow, so an invalid API token
triggered a compaction.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import structlog

from omoide.context.budget import PromptBudget
from omoide.context.calls import BudgetedResponse, OnText, Prompt, budgeted_complete, count_prompt, resolve_budget
from omoide.context.compaction import Compaction, compact
from omoide.context.truncation import truncate_tool_results
from omoide.context.turns import normalise_turns
from omoide.errors import InvalidContent
from omoide.models import Message
from omoide.providers.base import ChatModel, ChatResponse, TokenCounter, ToolSpec

log = structlog.get_logger(__name__)

DEFAULT_TOOL_RESULT_LIMIT = 20_000
"""Characters a tool result keeps in stage 1 unless ``OMOIDE_TOOL_RESULT_LIMIT`` says otherwise."""
MAX_SUMMARY_TOKENS = 2_048
"""The most tokens a compaction summary may use (capped by the call's answer reservation)."""


@dataclass(frozen=True)
class GuardResult:
    """A guarded call's outcome.

    Attributes:
        response: the model's answer.
        messages: the prompt turns actually sent (after truncation / compaction).
        stage: 0 (as given), 1 (tool results cut) or 2 (compacted).
        truncated: how many tool results were cut.
        compaction: the last compaction, when stage 2 ran (persist it: see
            :class:`~omoide.context.compaction.Compaction`).
        call: the budgeted call (its prompt, limit and count).
    """

    response: ChatResponse
    messages: list[Message]
    stage: int
    truncated: int = 0
    compaction: Compaction | None = None
    call: BudgetedResponse | None = field(default=None, repr=False, compare=False)

    @property
    def prompt_tokens(self) -> int:
        """The counted size of the prompt that was sent (counted on first access when its
        upper bound already proved it fit)."""
        return self.call.prompt_tokens if self.call is not None else 0

    @property
    def text(self) -> str:
        """The answer's text."""
        return self.response.text


class ContextGuard:
    """Wraps a :class:`~omoide.providers.base.ChatModel` so its prompts fit.

    Args:
        model: the model to call.
        counter: counts prompt tokens.
        budget: the model's window and the answer reservation.
        summariser: the model that writes compaction summaries (default: ``model``).
        tool_result_limit: characters a tool result may keep in stage 1.
        summary_budget: the summariser's budget (default: ``budget``'s window with
            room for a summary of up to 2,048 tokens when the summariser is ``model``, else
            the summariser's window from the built-in table).
    """

    def __init__(
        self,
        model: ChatModel,
        counter: TokenCounter,
        budget: PromptBudget,
        *,
        summariser: ChatModel | None = None,
        tool_result_limit: int = DEFAULT_TOOL_RESULT_LIMIT,
        summary_budget: PromptBudget | None = None,
    ) -> None:
        self.model = model
        self.counter = counter
        self.budget = budget
        self.summariser = summariser or model
        self.tool_result_limit = tool_result_limit
        if summary_budget is None:
            if summariser is None or summariser is model:
                summary_budget = PromptBudget(budget.context_window, min(MAX_SUMMARY_TOKENS, budget.reserved_output))
            else:
                summary_budget = resolve_budget(summariser, None, max_tokens=MAX_SUMMARY_TOKENS)
        self.summary_budget = summary_budget

    def count(self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()) -> int:
        """The counted size of a prompt (:func:`~omoide.context.calls.count_prompt`)."""
        return count_prompt(self.counter, messages, system=system, tools=tools)

    async def compact(self, turns: Sequence[Message]) -> tuple[list[Message], Compaction] | None:
        """Stage 2 once: summarise the oldest part of ``turns`` (a budgeted summariser call)."""
        return await compact(
            turns,
            self.summariser,
            max_summary_tokens=self.summary_budget.reserved_output,
            counter=self.counter,
            budget=self.summary_budget,
        )

    async def run(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        temperature: float | None = None,
        top_p: float | None = None,
        on_text: OnText | None = None,
        force_compact: bool = False,
    ) -> GuardResult:
        """Call the model with ``messages``, truncating and compacting as needed.

        Args:
            messages: the history, oldest first (normalised into alternating turns first).
            on_text: when given, the answer is streamed and each piece passed to it.
            force_compact: cut tool results and compact once before the first call (``/compact``).

        Raises:
            InvalidContent: the history has no user message.
            ContextOverflow: still too large after every stage (with ``prompt_tokens`` and ``limit``).
            ProviderError: any other provider failure, unchanged.
        """
        current = normalise_turns(messages)
        if not current:
            raise InvalidContent("nothing to send: the history has no user message")
        stages = _Stages(self)
        if force_compact:
            current, stages.truncated = truncate_tool_results(current, limit=self.tool_result_limit)
            stages.truncation_tried = True
            stages.stage = 1 if stages.truncated else 0
            done = await self.compact(current)
            if done is not None:
                current, stages.compaction = done
                stages.stage = 2
        call = await budgeted_complete(
            self.model,
            self.counter,
            self.budget,
            messages=current,
            system=system,
            tools=tools,
            temperature=temperature,
            top_p=top_p,
            on_text=on_text,
            trim=stages,
            hint=stages.hint,
        )
        return GuardResult(
            call.response,
            list(call.prompt.messages),
            stages.stage,
            truncated=stages.truncated,
            compaction=stages.compaction,
            call=call,
        )


@dataclass
class _Stages:
    """The guard's trim strategy: stage 1 once, then stage 2 while there is something to compact."""

    guard: ContextGuard
    stage: int = 0
    truncated: int = 0
    truncation_tried: bool = False
    compaction: Compaction | None = None

    async def __call__(self, prompt: Prompt, tokens: int, limit: int) -> Prompt | None:
        messages = list(prompt.messages)
        if not self.truncation_tried:
            self.truncation_tried = True
            cut_messages, cut = truncate_tool_results(messages, limit=self.guard.tool_result_limit)
            if cut:
                self.truncated, self.stage = cut, 1
                return replace(prompt, messages=cut_messages)
        done = await self.guard.compact(messages)
        if done is None:
            return None
        messages, self.compaction = done
        self.stage = 2
        log.info("context_compacted", replaced_turns=self.compaction.replaced_turns, counted_before=tokens, limit=limit)
        return replace(prompt, messages=messages)

    def hint(self) -> str:
        return (
            f"even after cutting {self.truncated} tool result(s) and "
            f"{'compacting' if self.compaction else 'finding nothing to compact in'} the history; "
            "start a new session or raise OMOIDE_CONTEXT_WINDOWS if the model allows more"
        )


__all__ = ["DEFAULT_TOOL_RESULT_LIMIT", "ContextGuard", "GuardResult", "OnText"]
