"""budgeted_complete: every chat-model call is counted first and never sent over the budget."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from omoide import Memory
from omoide.cli.chat import _runner
from omoide.context import Prompt, PromptBudget, budgeted_complete, count_prompt
from omoide.context.truncation import MARKER
from omoide.errors import ContextOverflow, ProviderUnavailable
from omoide.models import Message, ToolResultBlock, ToolUseBlock
from omoide.providers.base import ToolSpec
from omoide.providers.scripted import ScriptedChatModel
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings

counter = get_token_counter()


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


async def test_a_prompt_that_fits_is_sent_once_with_the_answer_room():
    model = ScriptedChatModel(["hi"], counter=counter)
    tools = (ToolSpec("lookup", "find a thing", {"type": "object", "properties": {"q": {"type": "string"}}}),)
    call = await budgeted_complete(
        model, counter, PromptBudget(10_000, 500), messages=[Message.user("hello")], system="s", tools=tools
    )
    assert call.text == "hi" and call.trims == 0
    assert call.prompt_tokens == count_prompt(counter, [Message.user("hello")], system="s", tools=tools)
    assert call.prompt_tokens == model.calls[0].prompt_tokens  # system + tools + messages, as the model sees them
    assert model.calls[0].max_tokens == 500  # the reserved answer room
    assert call.limit == 9_500


async def test_max_tokens_is_capped_by_the_reservation():
    model = ScriptedChatModel(["hi"], counter=counter)
    await budgeted_complete(model, counter, PromptBudget(10_000, 500), messages=[Message.user("x")], max_tokens=9_000)
    assert model.calls[0].max_tokens == 500
    await budgeted_complete(model.__class__(["ok"]), counter, None, messages=[Message.user("x")], max_tokens=100)


async def test_over_budget_without_a_trim_strategy_is_never_sent():
    model = ScriptedChatModel(["never"], counter=counter)
    with pytest.raises(ContextOverflow) as info:
        await budgeted_complete(
            model, counter, PromptBudget(300, 100), messages=[Message.user(words(400))], what="the test prompt"
        )
    assert model.calls == []
    assert info.value.limit == 200
    assert info.value.prompt_tokens and info.value.prompt_tokens > 200
    assert info.value.message.startswith("the test prompt is ")


async def test_a_trim_strategy_shrinks_the_prompt_until_it_fits():
    model = ScriptedChatModel(["ok"], counter=counter, overflow_above=200)
    seen: list[tuple[int, int]] = []

    def drop_oldest(prompt: Prompt, tokens: int, limit: int) -> Prompt | None:
        seen.append((tokens, limit))
        return Prompt(prompt.messages[1:], prompt.system) if len(prompt.messages) > 1 else None

    history = [Message.user(words(20, f"m{i}_")) for i in range(6)]
    call = await budgeted_complete(model, counter, PromptBudget(300, 100), messages=history, trim=drop_oldest)
    assert call.trims == len(seen) > 0
    assert call.prompt_tokens <= 200
    assert all(tokens > limit for tokens, limit in seen)
    assert len(model.calls) == 1 and model.calls[0].prompt_tokens <= 200


async def test_a_provider_overflow_lowers_the_limit_and_trims():
    # the provider's tokenizer counts more than ours: it overflows below our limit
    model = ScriptedChatModel(["ok"], counter=counter, overflow_above=150)
    history = [Message.user(words(12, f"m{i}_")) for i in range(6)]

    def drop_oldest(prompt: Prompt, tokens: int, limit: int) -> Prompt | None:
        return Prompt(prompt.messages[1:], prompt.system) if len(prompt.messages) > 1 else None

    call = await budgeted_complete(model, counter, PromptBudget(10_000, 100), messages=history, trim=drop_oldest)
    assert call.limit <= 150
    assert [c.prompt_tokens > 150 for c in model.calls] == [True, False]  # one refused round trip, then a fit
    with pytest.raises(ContextOverflow) as info:  # without a trim strategy: raised with our counts
        await budgeted_complete(model, counter, PromptBudget(10_000, 100), messages=history)
    assert info.value.prompt_tokens == count_prompt(counter, history)
    assert info.value.limit is not None and info.value.limit <= 150


async def test_other_errors_propagate_unchanged():
    error = ProviderUnavailable("500 from upstream", provider="scripted", status_code=500)
    model = ScriptedChatModel([error], counter=counter)
    trims: list[int] = []
    with pytest.raises(ProviderUnavailable) as info:
        await budgeted_complete(
            model,
            counter,
            PromptBudget(10_000, 100),
            messages=[Message.user("x")],
            trim=lambda p, t, lim: trims.append(t),  # type: ignore[arg-type, func-returns-value]
        )
    assert info.value is error and trims == []


async def test_the_window_override_in_settings_is_used():
    model = ScriptedChatModel(["ok"], counter=counter)
    small = Settings(context_windows={"scripted": 400})
    with pytest.raises(ContextOverflow) as info:
        await budgeted_complete(model, counter, small, messages=[Message.user(words(500))], max_tokens=100)
    assert info.value.limit == 300 and model.calls == []


# ------------------------------------------------------------------ OMOIDE_TOOL_RESULT_LIMIT


def tool_history(size: int) -> list[Message]:
    return [
        Message.user("read the log"),
        Message("assistant", (ToolUseBlock("t1", "read_file", {"path": "app.log"}),)),
        Message("user", (ToolResultBlock("t1", "HEAD" + "x" * size + "TAIL"),)),
    ]


def test_tool_result_limit_setting(monkeypatch):
    assert Settings().tool_result_limit == 20_000
    monkeypatch.setenv("OMOIDE_TOOL_RESULT_LIMIT", "1234")
    from omoide.settings import load_settings

    assert load_settings().tool_result_limit == 1234
    assert "tool result" in Settings.model_fields["tool_result_limit"].description  # type: ignore[operator]


@pytest.mark.parametrize("limit", [300, 3_000])
async def test_the_setting_changes_the_cut(settings: Any, limit: int):
    model = ScriptedChatModel(["done"] * 4, counter=counter, overflow_above=2_000)
    tuned = settings.model_copy(update={"tool_result_limit": limit})
    async with Memory.open(tuned, chat_model=model, token_counter=counter) as mem:
        runner = mem.chat_runner()
        assert runner.guard.tool_result_limit == limit
        result = await runner.guard.run(tool_history(40_000))
    assert result.stage == 1
    cut = result.messages[-1].content[0]
    assert isinstance(cut, ToolResultBlock)
    assert cut.content.startswith("HEAD") and cut.content.endswith("TAIL")
    kept = len(cut.content) - len(MARKER.format(omitted=40_008 - limit))
    assert kept == limit
    # the REPL's runner follows the same setting
    cli_runner = _runner(tuned.model_copy(update={"llm": None}), "system")
    assert cli_runner.guard.tool_result_limit == limit


# ------------------------------------------------------------------ the cheap upper bound


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(max_size=300), min_size=1, max_size=6),
    system=st.one_of(st.none(), st.text(max_size=100)),
    tool_text=st.text(max_size=200),
)
def test_the_upper_bound_is_never_below_the_exact_count(texts: list[str], system: str | None, tool_text: str):
    messages = [Message.user(t) if i % 2 == 0 else Message.assistant(t) for i, t in enumerate(texts) if t]
    messages += [
        Message("assistant", (ToolUseBlock("t1", "lookup", {"q": tool_text}),)),
        Message("user", (ToolResultBlock("t1", tool_text),)),
    ]
    tools = (ToolSpec("lookup", tool_text, {"type": "object"}),)
    exact = counter.count_messages(messages, system=system, tools=tools)
    assert counter.upper_bound(messages, system=system, tools=tools) >= exact
    # tightened towards any limit, it stays a bound, and reaches the exact count when it must
    for limit in (0, exact - 1, exact, exact + 3):
        tightened = counter.upper_bound(messages, system=system, tools=tools, limit=limit)
        assert tightened >= exact
        assert tightened <= limit or tightened == exact


class CountingCounter:
    """The real counter, recording how many exact counts were asked for."""

    name = "spy"

    def __init__(self) -> None:
        self.exact = 0

    def count(self, text: str) -> int:
        return counter.count(text)

    def count_messages(self, messages: Any, *, system: str | None = None, tools: Any = ()) -> int:
        self.exact += 1
        return counter.count_messages(messages, system=system, tools=tools)

    def upper_bound(
        self, messages: Any, *, system: str | None = None, tools: Any = (), limit: int | None = None
    ) -> int:
        return counter.upper_bound(messages, system=system, tools=tools, limit=limit)


async def test_a_prompt_that_surely_fits_is_counted_only_when_asked():
    spy = CountingCounter()
    history = [Message.user(words(50, f"m{i}_")) for i in range(5)]
    call = await budgeted_complete(ScriptedChatModel(["ok"]), spy, PromptBudget(200_000, 4_096), messages=history)
    assert spy.exact == 0  # the bound proved it fits: nothing encoded before sending
    assert call.prompt_tokens == counter.count_messages(history) and spy.exact == 1
    assert call.prompt_tokens == call.prompt_tokens and spy.exact == 1  # counted once
    # near the limit the byte bound is not enough: it is tightened with exact counts of
    # texts until it fits (here every text: the limit is 5 tokens above the count) ...
    exact = counter.count_messages(history)
    tight = PromptBudget(exact + 10, 5)
    assert spy.upper_bound(history) > exact + 5 and spy.upper_bound(history, limit=exact + 5) == exact
    await budgeted_complete(ScriptedChatModel(["ok"]), spy, tight, messages=history)
    assert spy.exact == 1  # ... so the prompt went without a second whole count
    # ... and a prompt over the limit is counted exactly and never sent
    with pytest.raises(ContextOverflow):
        await budgeted_complete(ScriptedChatModel(["ok"]), spy, PromptBudget(exact + 4, 5), messages=history)
    assert spy.exact == 2


async def test_compaction_summaries_are_budgeted_too():
    """One scripted model answers and summarises; the oldest half alone is over its window,
    so the compaction summary is written in parts — and no call is ever over the budget."""
    from omoide.chat import ChatRunner
    from omoide.context.compaction import SUMMARISER_SYSTEM
    from omoide.providers.scripted import ChatRequest

    def reply(request: ChatRequest) -> str:
        return "short summary" if request.system == SUMMARISER_SYSTEM else "ok"

    window, reserve = 1_200, 100
    model = ScriptedChatModel(reply, counter=counter, overflow_above=window - reserve)
    runner = ChatRunner(model, counter, PromptBudget(window, reserve))
    history = [(Message.user if i % 2 == 0 else Message.assistant)(words(40, f"t{i}_"), seq=i + 1) for i in range(40)]
    assert counter.count_messages(history[:20]) > window  # the oldest half does not fit one summary prompt
    result = await runner.guard.run(history)
    assert result.stage == 2
    summaries = [c for c in model.calls if c.system == SUMMARISER_SYSTEM]
    assert len(summaries) > 1  # summarised in parts
    assert all(c.prompt_tokens <= window - reserve for c in model.calls)
    assert all(c.max_tokens <= reserve for c in summaries)
