"""Answers inside a small context window: the lowest-ranked evidence is left out, citations stay right,
and the model never receives a prompt over its budget."""

from __future__ import annotations

import re

import pytest

from omoide import Memory
from omoide.errors import AnswerFailed
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.providers.tokens import get_token_counter
from search.helpers import seed, tuned

counter = get_token_counter()
MAX_TOKENS = 64


def citing(request: ChatRequest) -> str:
    """Cites [#1], the last passage it was given, and [#5] (which is gone when passages were left out)."""
    shown = re.findall(r"^\[#(\d+)\]", request.messages[0].text, flags=re.MULTILINE)
    return f"andy はバックエンドの開発者です [#1]。参考 [#{shown[-1]}]。[#5]"


async def full_prompt_tokens(mem: Memory) -> int:
    probe = ScriptedChatModel(citing, counter=counter)
    async with Memory.open(mem.settings, chat_model=probe, token_counter=counter) as m:
        result = await m.ask("andyって誰？", workspace="g1")
    assert len(result.hits) == 5 and not any("left out" in n for n in result.notes)
    return probe.calls[0].prompt_tokens


async def test_evidence_over_a_small_window_is_trimmed_and_still_cites(mem: Memory):
    await seed(mem)
    full = await full_prompt_tokens(mem)
    limit = full * 3 // 5  # room for some passages, not all five
    small = tuned(mem.settings, context_windows={"scripted": limit + MAX_TOKENS}, answer_max_tokens=MAX_TOKENS)
    model = ScriptedChatModel(citing, counter=counter, overflow_above=limit)
    async with Memory.open(small, chat_model=model, token_counter=counter) as m:
        result = await m.ask("andyって誰？", workspace="g1")

    assert len(model.calls) == 1  # no refused round trip: the prompt was counted before it was sent
    assert all(c.prompt_tokens <= limit for c in model.calls)
    assert model.calls[0].max_tokens == MAX_TOKENS
    kept = len(result.hits)
    assert 1 <= kept < 5
    note = next(n for n in result.notes if "left out" in n)
    assert note.startswith(f"{5 - kept} lowest-ranked evidence passage(s) left out")
    sent = model.calls[0].messages[0].text
    assert f"[#{kept}] " in sent and f"[#{kept + 1}] " not in sent
    # citations number the passages as they were sent; [#5] was not sent, so it is no citation
    assert [c.number for c in result.citations] == sorted({1, kept})
    for citation in result.citations:
        assert citation.hit == result.hits[citation.number - 1]
        assert citation.hit.content.splitlines()[0][:20] in sent
    assert "andy はバックエンドの開発者" in result.hits[0].content  # the best passage is kept


async def test_a_provider_overflow_below_our_count_is_trimmed_the_same_way(mem: Memory):
    await seed(mem)
    full = await full_prompt_tokens(mem)
    # our window says it fits; the provider (another tokenizer) refuses above 60% of it
    model = ScriptedChatModel(citing, counter=counter, overflow_above=full * 3 // 5)
    async with Memory.open(mem.settings, chat_model=model, token_counter=counter) as m:
        result = await m.ask("andyって誰？", workspace="g1")
    assert [c.prompt_tokens > full * 3 // 5 for c in model.calls] == [True, False]
    assert 1 <= len(result.hits) < 5 and any("left out" in n for n in result.notes)


async def test_a_question_that_cannot_fit_is_never_sent(mem: Memory):
    await seed(mem)
    small = tuned(mem.settings, context_windows={"scripted": 300}, answer_max_tokens=MAX_TOKENS)
    model = ScriptedChatModel(citing, counter=counter, overflow_above=300 - MAX_TOKENS)
    async with Memory.open(small, chat_model=model, token_counter=counter) as m:
        with pytest.raises(AnswerFailed) as info:
            await m.ask("andy " + "とても長い質問 " * 200, workspace="g1")
    assert info.value.details.get("cause_code") == "CONTEXT_OVERFLOW"
    assert "does not fit the context window" in info.value.message
    assert model.calls == []
