"""ContextGuard: each stage driven by a scripted model that overflows like a real provider."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omoide.context import ContextGuard, PromptBudget, prompt_budget
from omoide.context.compaction import SUMMARISER_SYSTEM, SUMMARY_ACK, SUMMARY_PREFIX, split_index
from omoide.context.turns import normalise_turns
from omoide.errors import (
    AuthenticationFailed,
    ConfigError,
    ContextOverflow,
    InvalidContent,
    ProviderUnavailable,
    RateLimited,
)
from omoide.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from omoide.providers.scripted import ScriptedChatModel
from omoide.providers.tokens import get_token_counter

counter = get_token_counter()


def history(n: int, words: int = 30) -> list[Message]:
    out = []
    for i in range(n):
        text = f"turn {i}: " + " ".join(f"word{i}_{j}" for j in range(words))
        out.append(Message.user(text, seq=i + 1) if i % 2 == 0 else Message.assistant(text, seq=i + 1))
    return out


def summariser() -> ScriptedChatModel:
    return ScriptedChatModel(lambda req: f"summary of {req.messages[0].text.count('turn ')} turns", counter=counter)


def guard_for(model, window: int, reserve: int = 100, **kwargs) -> ContextGuard:
    return ContextGuard(
        model,
        counter,
        PromptBudget(window, reserve),
        summariser=kwargs.pop("summariser", None) or summariser(),
        **kwargs,
    )


async def test_stage0_passes_through():
    model = ScriptedChatModel(["hello"], counter=counter, overflow_above=10_000)
    result = await guard_for(model, 20_000).run(history(6), system="be nice")
    assert result.stage == 0
    assert result.response.text == "hello"
    assert len(model.calls) == 1
    assert model.calls[0].system == "be nice"
    assert model.calls[0].max_tokens == 100


async def test_counted_over_budget_skips_the_failing_round_trip():
    model = ScriptedChatModel(["ok"], counter=counter, overflow_above=1_000)
    msgs = history(40)
    assert counter.count_messages(msgs) > 1_000
    result = await guard_for(model, 1_100).run(msgs)
    assert result.stage == 2
    assert len(model.calls) == 1  # only the call that fits was made
    assert result.prompt_tokens <= 1_000


async def test_stage1_truncates_large_tool_results_with_a_marker():
    big = "x" * 60_000
    msgs = [
        Message.user("read the log"),
        Message("assistant", (ToolUseBlock("t1", "read_file", {"path": "app.log"}),)),
        Message("user", (ToolResultBlock("t1", "HEAD" + big + "TAIL"),)),
    ]
    model = ScriptedChatModel(["done"], counter=counter, overflow_above=6_000)
    result = await guard_for(model, 20_000, tool_result_limit=2_000).run(msgs)
    assert result.stage == 1
    assert result.truncated == 1
    cut = result.messages[-1].content[0]
    assert isinstance(cut, ToolResultBlock)
    assert cut.content.startswith("HEAD") and cut.content.endswith("TAIL")
    assert "characters of this tool result were cut" in cut.content
    assert f"{60_008 - 2_000:,}" in cut.content
    # the provider said overflow once (stage 0), then accepted stage 1
    assert len(model.calls) == 2


async def test_stage2_compacts_oldest_half_into_a_summary_pair():
    msgs = history(20)
    tokens = counter.count_messages(msgs)
    model = ScriptedChatModel(["fine"], counter=counter, overflow_above=tokens - 100)
    summ = summariser()
    result = await guard_for(model, 100_000, summariser=summ).run(msgs)
    assert result.stage == 2
    assert result.messages[0].text.startswith(SUMMARY_PREFIX)
    assert result.messages[1].text == SUMMARY_ACK
    assert result.messages[2:] == normalise_turns(msgs)[10:]
    assert result.compaction is not None
    assert result.compaction.replaced_turns == 10
    assert result.compaction.through_seq == 10
    assert summ.calls[0].system == SUMMARISER_SYSTEM
    assert "turn 0:" in summ.calls[0].messages[0].text and "turn 9:" in summ.calls[0].messages[0].text
    assert "turn 10:" not in summ.calls[0].messages[0].text


async def test_force_compact():
    model = ScriptedChatModel(["fine"], counter=counter)
    result = await guard_for(model, 100_000).run(history(12), force_compact=True)
    assert result.stage == 2
    assert result.messages[0].text.startswith(SUMMARY_PREFIX)


async def test_stage3_raises_with_counts():
    huge = Message.user("あ" * 30_000)
    model = ScriptedChatModel(["never"], counter=counter, overflow_above=2_000)
    with pytest.raises(ContextOverflow) as info:
        await guard_for(model, 2_100).run([huge])
    assert info.value.prompt_tokens and info.value.prompt_tokens > 2_000
    assert info.value.limit == 2_000
    assert "start a new session" in info.value.message
    assert model.calls == []


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationFailed("invalid x-api-key: token rejected", provider="anthropic", status_code=401),
        ProviderUnavailable("context deadline exceeded (upstream 500)", provider="openai", status_code=500),
        RateLimited("too many tokens per minute", provider="openai", retry_after=1.0),
    ],
)
async def test_other_errors_are_never_compacted(error):
    model = ScriptedChatModel([error], counter=counter)
    summ = summariser()
    with pytest.raises(type(error)) as info:
        await guard_for(model, 100_000, summariser=summ).run(history(20))
    assert info.value is error
    assert len(model.calls) == 1
    assert summ.calls == []


async def test_compaction_never_splits_a_tool_pair():
    msgs = [Message.user("start")]
    for i in range(6):
        msgs.append(Message("assistant", (TextBlock(f"calling {i}"), ToolUseBlock(f"t{i}", "lookup", {"i": i}))))
        msgs.append(Message("user", (ToolResultBlock(f"t{i}", f"result {i}"),)))
    msgs.append(Message.assistant("all done"))
    msgs.append(Message.user("thanks, now summarise"))
    turns = normalise_turns(msgs)
    index = split_index(turns)
    # the only plain user turns are the first and last; the cut moves back to the first kept plain user turn
    assert index is None or not any(isinstance(b, ToolResultBlock) for b in turns[index].content)


def test_budget_reserves_room_for_the_answer():
    budget = prompt_budget("claude-sonnet-4-5", max_tokens=4_096)
    assert budget.context_window == 200_000
    assert budget.prompt_limit == 200_000 - 4_096
    with pytest.raises(ConfigError, match="leaves no room"):
        prompt_budget("gpt-4", max_tokens=10**9)


def test_normalise_turns_merges_and_pairs():
    msgs = [
        Message.assistant("greeting before any user"),
        Message.user("a", author_name="A"),
        Message.user("b", author_name="B"),
        Message("assistant", (ToolUseBlock("t1", "x", {}), ToolUseBlock("t2", "y", {}))),
        Message("user", (TextBlock("note"),)),
        Message("user", (ToolResultBlock("t1", "r1"),)),
        Message("user", (ToolResultBlock("orphan", "r?"),)),
        Message.assistant("end"),
    ]
    turns = normalise_turns(msgs)
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[0].text == "a\nb"
    assert [b.id for b in turns[1].content if isinstance(b, ToolUseBlock)] == ["t1"]  # t2 never answered
    assert isinstance(turns[2].content[0], ToolResultBlock)  # tool results first
    assert all(not (isinstance(b, ToolResultBlock) and b.tool_use_id == "orphan") for b in turns[2].content)


# ------------------------------------------------------------------ properties


@st.composite
def histories(draw):
    msgs: list[Message] = []
    n = draw(st.integers(1, 30))
    tool_no = 0
    for _ in range(n):
        kind = draw(st.sampled_from(["user", "assistant", "tool"]))
        words = draw(st.integers(1, 60))
        text = " ".join(f"w{len(msgs)}_{j}" for j in range(words))
        if kind == "user":
            msgs.append(Message.user(text, seq=len(msgs) + 1))
        elif kind == "assistant":
            msgs.append(Message.assistant(text, seq=len(msgs) + 1))
        else:
            calls = draw(st.integers(1, 3))
            ids = [f"t{tool_no + k}" for k in range(calls)]
            tool_no += calls
            msgs.append(
                Message("assistant", tuple(ToolUseBlock(i, "tool", {"q": text[:20]}) for i in ids), seq=len(msgs) + 1)
            )
            size = draw(st.sampled_from([10, 200, 5_000]))
            msgs.append(Message("user", tuple(ToolResultBlock(i, "r" * size) for i in ids), seq=len(msgs) + 1))
    return msgs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=histories(), window=st.sampled_from([600, 1_500, 4_000, 50_000]))
async def test_guard_properties(msgs, window):
    original = list(msgs)
    limit = window - 100
    model = ScriptedChatModel(["ok"] * 5, counter=counter, overflow_above=limit)
    guard = guard_for(model, window, tool_result_limit=500)
    if not normalise_turns(msgs):
        with pytest.raises(InvalidContent):
            await guard.run(msgs)
        return
    overflow: ContextOverflow | None = None
    try:
        result = await guard.run(msgs)
    except ContextOverflow as exc:
        overflow = exc
    assert msgs == original  # the stored history is never changed by the guard
    if overflow is not None:
        assert overflow.prompt_tokens is not None
        assert overflow.prompt_tokens > limit
        return
    prompt = result.messages
    assert result.prompt_tokens <= limit
    assert counter.count_messages(prompt) <= limit
    assert prompt[0].role == "user"
    assert all(a.role != b.role for a, b in itertools.pairwise(prompt))
    for i, turn in enumerate(prompt):
        for block in turn.content:
            if isinstance(block, ToolResultBlock):
                assert i > 0
                asked = {b.id for b in prompt[i - 1].content if isinstance(b, ToolUseBlock)}
                assert block.tool_use_id in asked
    # nothing is invented: every text in the prompt is an original text or the summary pair
    originals = {b.text for m in original for b in m.content if isinstance(b, TextBlock)}
    for turn in prompt:
        for block in turn.content:
            if isinstance(block, TextBlock):
                assert block.text in originals or block.text.startswith(SUMMARY_PREFIX) or block.text == SUMMARY_ACK
    # every original message is either in the prompt verbatim or covered by the summary
    covered = result.compaction.through_seq if result.compaction and result.compaction.through_seq else 0
    prompt_texts = {b.text for m in prompt for b in m.content if isinstance(b, TextBlock)}
    for m in normalise_turns(original):  # a leading assistant turn cannot open a prompt
        if m.seq is not None and m.seq > covered:
            for b in m.content:
                if isinstance(b, TextBlock):
                    assert b.text in prompt_texts
