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

Only a provider's typed ``ContextOverflow`` moves the guard to the next stage; every
other error (a bad key, a 500, a rate limit) propagates unchanged. (Seed 002 treated any
error whose text contained "context" or "token" as an overflow, so an invalid API token
triggered a compaction.)
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import structlog

from omoide.context.budget import PromptBudget
from omoide.context.compaction import Compaction, compact
from omoide.context.truncation import truncate_tool_results
from omoide.context.turns import normalise_turns
from omoide.errors import ContextOverflow, InvalidContent
from omoide.models import Message
from omoide.providers.base import ChatModel, ChatResponse, StreamDone, TextDelta, TokenCounter, ToolSpec

log = structlog.get_logger(__name__)

OnText = Callable[[str], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class GuardResult:
    """A guarded call's outcome.

    Attributes:
        response: the model's answer.
        messages: the prompt turns actually sent (after truncation / compaction).
        stage: 0 (as given), 1 (tool results cut) or 2 (compacted).
        prompt_tokens: the counted prompt size that was sent.
        truncated: how many tool results were cut.
        compaction: the last compaction, when stage 2 ran (persist it: see
            :class:`~omoide.context.compaction.Compaction`).
    """

    response: ChatResponse
    messages: list[Message]
    stage: int
    prompt_tokens: int
    truncated: int = 0
    compaction: Compaction | None = None

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
    """

    def __init__(
        self,
        model: ChatModel,
        counter: TokenCounter,
        budget: PromptBudget,
        *,
        summariser: ChatModel | None = None,
        tool_result_limit: int = 20_000,
    ) -> None:
        self.model = model
        self.counter = counter
        self.budget = budget
        self.summariser = summariser or model
        self.tool_result_limit = tool_result_limit

    def count(self, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()) -> int:
        return self.counter.count_messages(messages, system=system, tools=tools)

    async def _call(
        self,
        messages: list[Message],
        *,
        system: str | None,
        tools: Sequence[ToolSpec],
        temperature: float | None,
        top_p: float | None,
        on_text: OnText | None,
    ) -> ChatResponse:
        max_tokens = self.budget.reserved_output
        if on_text is None:
            return await self.model.complete(
                messages, system=system, tools=tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
            )
        final: ChatResponse | None = None
        stream = self.model.stream(
            messages, system=system, tools=tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
        )
        async for event in stream:
            if isinstance(event, TextDelta):
                shown = on_text(event.text)
                if shown is not None:
                    await shown
            elif isinstance(event, StreamDone):
                final = event.response
        if final is None:
            raise ContextOverflow("the model's stream ended without a final response")  # pragma: no cover
        return final

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
            force_compact: compact before the first call (``/compact``).

        Raises:
            InvalidContent: the history has no user message.
            ContextOverflow: still too large after every stage (with ``prompt_tokens`` and ``limit``).
            ProviderError: any other provider failure, unchanged.
        """
        limit = self.budget.prompt_limit
        current = normalise_turns(messages)
        if not current:
            raise InvalidContent("nothing to send: the history has no user message")
        tokens = self.count(current, system=system, tools=tools)
        call = functools.partial(
            self._call, system=system, tools=tools, temperature=temperature, top_p=top_p, on_text=on_text
        )

        if not force_compact:
            if tokens <= limit:
                try:
                    return GuardResult(await call(current), current, 0, tokens)
                except ContextOverflow as exc:
                    limit = _tighten(limit, tokens, exc, stage=0)
            else:
                log.info("context_over_budget", stage=0, counted=tokens, limit=limit)

        current, cut = truncate_tool_results(current, limit=self.tool_result_limit)
        if cut:
            tokens = self.count(current, system=system, tools=tools)
            if not force_compact and tokens <= limit:
                try:
                    return GuardResult(await call(current), current, 1, tokens, truncated=cut)
                except ContextOverflow as exc:
                    limit = _tighten(limit, tokens, exc, stage=1)

        compaction: Compaction | None = None
        while True:  # each round shortens the history, so this ends (split_index → None)
            done = await compact(current, self.summariser)
            if done is None:
                break
            current, compaction = done
            tokens = self.count(current, system=system, tools=tools)
            log.info("context_compacted", replaced_turns=compaction.replaced_turns, counted=tokens, limit=limit)
            if tokens > limit:
                continue
            try:
                result = await call(current)
                return GuardResult(result, current, 2, tokens, truncated=cut, compaction=compaction)
            except ContextOverflow as exc:
                limit = _tighten(limit, tokens, exc, stage=2)
        raise ContextOverflow(
            f"the prompt is {tokens:,} tokens and the limit is {limit:,} for {self.model.model_id}, even after "
            f"cutting {cut} tool result(s) and {'compacting' if compaction else 'finding nothing to compact in'} "
            "the history; start a new session or raise OMOIDE_CONTEXT_WINDOWS if the model allows more",
            provider=self.model.provider,
            prompt_tokens=tokens,
            limit=limit,
        )


def _tighten(limit: int, tokens: int, exc: ContextOverflow, *, stage: int) -> int:
    """The provider said the prompt is too long although our count fit: lower our limit.

    When the provider says how long the prompt was and what its limit is, our count is
    scaled by that ratio (tokenizers differ between providers); otherwise we aim 10% lower.
    """
    if exc.prompt_tokens and exc.limit and exc.prompt_tokens > exc.limit:
        target = tokens * exc.limit // exc.prompt_tokens
    else:
        target = tokens * 9 // 10
    new_limit = max(1, min(limit, target))
    log.info(
        "context_overflow", stage=stage, counted=tokens, limit=limit, new_limit=new_limit, provider_error=exc.message
    )
    return new_limit


__all__ = ["ContextGuard", "GuardResult", "OnText"]
