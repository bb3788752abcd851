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
