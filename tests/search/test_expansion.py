"""Query expansion: the chat model proposes alternative queries; all are searched and fused."""

from __future__ import annotations

from omoide import Memory
from omoide.errors import ProviderUnavailable
from omoide.providers.scripted import ScriptedChatModel
from omoide.search.pipeline import parse_expansions

from .helpers import seed, tuned


def test_parse_expansions():
    reply = "Here are alternatives:\n1. 天気予報\n- 「晴れ」\n* 天気\n2) forecast\n\n3. extra"
    assert parse_expansions(reply, "天気", 3) == ["天気予報", "晴れ", "forecast"]


async def test_expanded_queries_are_searched_and_fused(mem: Memory):
    await seed(mem)
    model = ScriptedChatModel(["1. ラーメン\n2. HNSW"])
    async with Memory.open(tuned(mem.settings, search_query_expansion=2), chat_model=model) as m:
        result = await m.search("天気", workspace="g1", k=7, explain=True)
    assert result.queries == ("天気", "ラーメン", "HNSW")
    assert "expand" in result.timings
    assert "Propose 2 alternative search queries" in model.calls[0].messages[0].text
    lists = {name for h in result.hits for name in (h.ranks or {})}
    assert {"vector", "lexical", "vector#2", "lexical#2", "vector#3", "lexical#3", "fused"} <= lists
    found = " ".join(h.content for h in result.hits)
    assert "天気" in found and "ラーメン" in found and "HNSW" in found


async def test_expansion_failure_and_extractive_model_are_noted(mem: Memory):
    await seed(mem)
    failing = ScriptedChatModel([ProviderUnavailable("down", provider="scripted")])
    async with Memory.open(tuned(mem.settings, search_query_expansion=2), chat_model=failing) as m:
        result = await m.search("天気", workspace="g1")
    assert result.queries == ("天気",) and result.hits
    assert "query expansion failed (PROVIDER_UNAVAILABLE)" in result.notes[0]
    async with Memory.open(tuned(mem.settings, search_query_expansion=2)) as offline:
        result = await offline.search("天気", workspace="g1")
    assert result.queries == ("天気",)
    assert "extractive model cannot rephrase" in result.notes[0]


async def test_expansion_off_by_default(mem: Memory):
    await seed(mem)
    model = ScriptedChatModel([])
    mem._chat_model = model
    result = await mem.search("天気", workspace="g1")
    assert result.queries == ("天気",) and model.calls == [] and "expand" not in result.timings


async def test_expansion_over_the_budget_is_skipped_with_a_note(mem: Memory):
    from omoide.providers.tokens import get_token_counter

    await seed(mem)
    counter = get_token_counter()
    model = ScriptedChatModel(["1. ラーメン"], counter=counter, overflow_above=100)
    small = tuned(mem.settings, search_query_expansion=2, context_windows={"scripted": 256 + 100})
    long_query = "天気 " + "とても長い検索語 " * 60
    async with Memory.open(small, chat_model=model, token_counter=counter) as m:
        result = await m.search(long_query, workspace="g1")
        assert model.calls == []  # never sent over the budget
        assert result.queries == (long_query.strip(),) and result.hits
        note = next(n for n in result.notes if n.startswith("query expansion skipped"))
        assert "does not fit the context window of scripted:scripted (limit 100)" in note
        short = await m.search("天気", workspace="g1")  # a query that fits is still expanded
    assert short.queries == ("天気", "ラーメン")
    assert [c.prompt_tokens <= 100 for c in model.calls] == [True]
