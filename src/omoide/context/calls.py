"""The one way omoide calls a chat model: counted first, inside the budget, never over it.

Every call to a chat model — a chat turn through the :class:`~omoide.context.guard.ContextGuard`,
a cited answer, a summary, a compaction summary, a query expansion — goes through
:func:`budgeted_complete`:

1. the prompt (system + tools + messages) is counted with the
   :class:`~omoide.providers.base.TokenCounter` (:func:`count_prompt`, the only place a
   prompt is counted). A counter that can bound a prompt cheaply (``upper_bound``: for
   cl100k, UTF-8 bytes, never fewer than tokens; near the limit tightened by counting the
   loosest texts exactly until it fits) lets a prompt that surely fits go without the full
   count, which is then computed only when asked for (``prompt_tokens``): the guard's
   overhead stays well under 2 ms even when no text was counted before;
2. the budget reserves the answer's room (``max_tokens``, capped by the model's output
   limit) out of the model's context window (:func:`~omoide.context.budget.prompt_budget`,
   overridable with ``OMOIDE_CONTEXT_WINDOWS``);
3. a prompt that fits is sent; one that does not is never sent: the caller's ``trim``
   strategy is asked for a smaller prompt (the answerer drops its lowest-ranked evidence,
   the guard cuts tool results and compacts), and without one (or when nothing is left to
   trim) :class:`~omoide.errors.ContextOverflow` is raised with the counts;
4. when the provider still reports a typed ``ContextOverflow`` (its tokenizer counts more
   than ours), the limit is lowered by the provider's figures and the prompt is trimmed the
   same way, or the overflow is raised with our counts. Every other provider error
   propagates unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import structlog

from omoide.context.budget import PromptBudget, prompt_budget
from omoide.errors import ContextOverflow
from omoide.models import Message
from omoide.providers.base import ChatModel, ChatResponse, StreamDone, TextDelta, TokenCounter, ToolSpec
from omoide.settings import Settings

log = structlog.get_logger(__name__)

OnText = Callable[[str], Awaitable[None] | None]
"""Receives each piece of a streamed answer."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """What one call sends: system prompt, tools and messages."""

    messages: Sequence[Message]
    system: str | None = None
    tools: Sequence[ToolSpec] = ()


TrimResult = Prompt | None
Trim = Callable[[Prompt, int, int], TrimResult | Awaitable[TrimResult]]
"""A trim strategy: given a prompt that does not fit, its counted tokens and the limit,
return a smaller prompt, or ``None`` when nothing more can be trimmed."""


@runtime_checkable
class BoundedCounter(Protocol):
    """A :class:`~omoide.providers.base.TokenCounter` that can also bound a prompt cheaply."""

    def upper_bound(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        limit: int | None = None,
    ) -> int:
        """A number of tokens the prompt surely does not exceed; with ``limit``, tightened
        (by counting some texts exactly) until it is within ``limit`` if it can be."""


@dataclass(frozen=True)
class BudgetedResponse:
    """A call made inside the budget.

    Attributes:
        response: the model's answer.
        prompt: the prompt actually sent (after trimming).
        limit: the prompt limit it was checked against (lowered after a provider overflow).
        trims: how many times the trim strategy shortened the prompt.
        counter: the counter that checked it.
        counted: the exact count when it was needed before sending (else ``None``: the
            prompt's upper bound was within the limit).
    """

    response: ChatResponse
    prompt: Prompt
    limit: int
    trims: int = 0
    counter: TokenCounter | None = field(default=None, repr=False, compare=False)
    counted: int | None = None

    @functools.cached_property
    def prompt_tokens(self) -> int:
        """The prompt's exact counted size (counted now if the bound sufficed before sending)."""
        if self.counted is not None or self.counter is None:
            return self.counted or 0
        return _count(self.counter, self.prompt)

    @property
    def text(self) -> str:
        return self.response.text


def count_prompt(
    counter: TokenCounter, messages: Sequence[Message], *, system: str | None = None, tools: Sequence[ToolSpec] = ()
) -> int:
    """Tokens a request with ``messages``, ``system`` and ``tools`` uses (the one place prompts are counted)."""
    return counter.count_messages(messages, system=system, tools=tools)


def _count(counter: TokenCounter, prompt: Prompt) -> int:
    return count_prompt(counter, prompt.messages, system=prompt.system, tools=prompt.tools)


def surely_fits(counter: TokenCounter, prompt: Prompt, limit: int) -> bool:
    """True when the counter's cheap upper bound already proves ``prompt`` fits ``limit``."""
    if not isinstance(counter, BoundedCounter):
        return False
    bound = counter.upper_bound(prompt.messages, system=prompt.system, tools=prompt.tools, limit=limit)
    return bound <= limit


def resolve_budget(
    model: ChatModel, budget: PromptBudget | Settings | None, *, max_tokens: int | None = None
) -> PromptBudget:
    """``budget`` itself, or the budget of ``model`` from the settings' windows (or the built-in table)."""
    if isinstance(budget, PromptBudget):
        return budget
    return prompt_budget(model.model_id, budget, max_tokens=max_tokens)


def tighten(limit: int, tokens: int, exc: ContextOverflow, *, stage: int | str = 0) -> int:
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


def over_budget(
    model: ChatModel, tokens: int, limit: int, *, what: str = "the prompt", hint: str | Callable[[], str] = ""
) -> ContextOverflow:
    """The :class:`ContextOverflow` for a prompt of ``tokens`` that does not fit ``limit``."""
    if callable(hint):
        hint = hint()
    return ContextOverflow(
        f"{what} is {tokens:,} tokens and the limit is {limit:,} for {model.provider}:{model.model_id}"
        + (f"; {hint}" if hint else "; raise OMOIDE_CONTEXT_WINDOWS if the model allows more"),
        provider=model.provider,
        prompt_tokens=tokens,
        limit=limit,
    )


async def send(
    model: ChatModel,
    prompt: Prompt,
    *,
    max_tokens: int,
    temperature: float | None = None,
    top_p: float | None = None,
    on_text: OnText | None = None,
) -> ChatResponse:
    """Send ``prompt`` as it is (a complete call, or a stream when ``on_text`` is given).

    Only :func:`budgeted_complete` calls this, after counting the prompt.
    """
    p = prompt
    if on_text is None:
        return await model.complete(
            p.messages, system=p.system, tools=p.tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
        )
    final: ChatResponse | None = None
    events = model.stream(
        p.messages, system=p.system, tools=p.tools, max_tokens=max_tokens, temperature=temperature, top_p=top_p
    )
    async for event in events:
        if isinstance(event, TextDelta):
            shown = on_text(event.text)
            if shown is not None:
                await shown
        elif isinstance(event, StreamDone):
            final = event.response
    if final is None:
        raise ContextOverflow("the model's stream ended without a final response")  # pragma: no cover
    return final


async def budgeted_complete(
    model: ChatModel,
    counter: TokenCounter,
    budget: PromptBudget | Settings | None,
    *,
    messages: Sequence[Message],
    system: str | None = None,
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    on_text: OnText | None = None,
    trim: Trim | None = None,
    what: str = "the prompt",
    hint: str | Callable[[], str] = "",
    max_trims: int = 100,
) -> BudgetedResponse:
    """Call ``model`` with a prompt that is counted first and never sent over the budget.

    Args:
        model: the chat model.
        counter: counts the prompt.
        budget: the window and answer reservation, or the settings to look the model's
            window up in (``OMOIDE_CONTEXT_WINDOWS``), or ``None`` for the built-in table.
        messages / system / tools: the prompt.
        max_tokens: the answer's room (default: the model's output limit); capped by the
            budget's reservation, so prompt + answer fit the window.
        on_text: stream the answer, passing each piece of text to it.
        trim: makes an over-budget prompt smaller (see :data:`Trim`); without it such a
            prompt raises at once.
        what: names the prompt in the error message (``"the answer prompt"``).
        hint: what the user can do, appended to the error message (or a function returning it).
        max_trims: give up (``ContextOverflow``) after trimming this many times.

    Raises:
        ContextOverflow: the prompt does not fit and cannot be trimmed to fit (with
            ``prompt_tokens`` and ``limit``), whether our count or the provider said so.
        ConfigError: ``max_tokens`` leaves no room for a prompt.
        ProviderError: any other provider failure, unchanged.
    """
    plan = resolve_budget(model, budget, max_tokens=max_tokens)
    answer_room = plan.reserved_output if max_tokens is None else min(max_tokens, plan.reserved_output)
    limit = plan.prompt_limit
    prompt = Prompt(messages, system, tools)
    trims = 0
    while True:
        tokens: int | None = None
        if not surely_fits(counter, prompt, limit):
            tokens = _count(counter, prompt)
        if tokens is None or tokens <= limit:
            try:
                response = await send(
                    model, prompt, max_tokens=answer_room, temperature=temperature, top_p=top_p, on_text=on_text
                )
                return BudgetedResponse(response, prompt, limit, trims, counter, tokens)
            except ContextOverflow as exc:
                if tokens is None:
                    tokens = _count(counter, prompt)
                limit = tighten(limit, tokens, exc, stage=trims)
                if trim is None:
                    raise over_budget(model, tokens, limit, what=what, hint=hint) from exc
        else:
            log.info("context_over_budget", what=what, counted=tokens, limit=limit, trims=trims)
        if trim is None or trims >= max_trims:
            raise over_budget(model, tokens, limit, what=what, hint=hint)
        smaller = trim(prompt, tokens, limit)
        if inspect.isawaitable(smaller):
            smaller = await smaller
        if smaller is None:
            raise over_budget(model, tokens, limit, what=what, hint=hint)
        prompt = smaller
        trims += 1


__all__ = [
    "BoundedCounter",
    "BudgetedResponse",
    "OnText",
    "Prompt",
    "Trim",
    "budgeted_complete",
    "count_prompt",
    "over_budget",
    "resolve_budget",
    "send",
    "surely_fits",
    "tighten",
]
