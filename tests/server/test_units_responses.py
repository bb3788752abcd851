"""The HTTP API's search, ask and status responses with retrieval units: a hit may be one
message (``unit`` ``turn``) with its ``line``, ``message_ids`` and ``quote``; an answer's
evidence and citations are chunks, each once, with the turns that matched.

The hits are built by hand (only ``Memory.search`` / ``Memory.ask`` are stand-ins), so these do
not depend on how the search pipeline finds turns."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from answers.turn_hits import HITS, RELEASE_CHUNK, FakePipeline, whole
from omoide import Memory
from omoide.answers import Answerer, GenerationConfig
from omoide.api_models import SearchOut
from omoide.providers.local.extractive import ExtractiveChatModel
from omoide.search.pipeline import SearchResult
from omoide.server.schemas import SEARCH_EXAMPLE
from omoide.stores.search import SearchFilters


def stand_in(monkeypatch: Any, memory: Memory, hits: list[Any]) -> None:
    async def search(query: str, *, workspace: str, explain: bool = False, **_: Any) -> SearchResult:
        found = [replace(h, ranks={"lexical": 1, "unit": h.rank, "fused": h.rank}) if explain else h for h in hits]
        return SearchResult(query, "hybrid", tuple(found), (query,), {"search": 1.0})

    async def ask(question: str, *, workspace: str, **_: Any) -> Any:
        answerer = Answerer(FakePipeline(hits), ExtractiveChatModel, GenerationConfig())  # type: ignore[arg-type]
        return await answerer.ask(question, SearchFilters(workspace_id=workspace))

    monkeypatch.setattr(memory, "search", search)
    monkeypatch.setattr(memory, "ask", ask)


async def test_search_hits_carry_unit_line_message_ids_and_quote(client, tenants, memory, monkeypatch):
    stand_in(monkeypatch, memory, [*HITS, whole(RELEASE_CHUNK, 5)])
    found = await client.post("/v1/search", headers=tenants.ha, json={"query": "延期", "explain": True})
    assert found.status_code == 200, found.text
    hits = found.json()["hits"]
    first = hits[0]
    assert first["unit"] == "turn" and first["line"] == 2 and first["message_ids"] == ["m3"]
    assert first["quote"] == "[2025-11-15 13:32] **mika**: CI が不安定なので v0.4.0 のリリースは来週に延期します"
    assert first["ranks"] == {"lexical": 1, "unit": 1, "fused": 1} and first["features"] is None
    assert first["chunk_id"] == 12 and "lines" not in first["location"]
    last = hits[-1]
    assert last["unit"] == "chunk" and last["line"] is None and last["quote"] is None
    assert last["message_ids"] == ["m1", "m2", "m3", "m4", "m5"]


async def test_ask_quotes_and_cites_each_chunk_once(client, tenants, memory, monkeypatch):
    stand_in(monkeypatch, memory, HITS)
    answered = await client.post(
        "/v1/ask", headers=tenants.ha, json={"question": "v0.4.0 のリリースが延期された理由は？", "language": "ja"}
    )
    assert answered.status_code == 200, answered.text
    data = answered.json()
    assert [e["chunk_id"] for e in data["evidence"]] == [12, 7]
    assert [m["line"] for m in data["evidence"][0]["matched"]] == [2, 1, 3]
    assert "来週に延期します」 [#1]" in data["text"]
    cited = data["citations"][0]
    assert cited["number"] == 1 and cited["chunk_id"] == 12 and cited["unit"] == "turn"
    assert [(m["rank"], m["message_ids"]) for m in cited["matched"]] == [(1, ["m3"]), (3, ["m2"]), (4, ["m4"])]


async def test_status_reports_units_to_build(client, tenants):
    status = (await client.get("/v1/status", headers=tenants.ha)).json()
    assert status["units_missing"] == 0 and status["unit_vectors_missing"] == {}


async def test_openapi_documents_the_unit_fields(client):
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    hit = next(v for k, v in schemas.items() if k.startswith("SearchHitOut"))
    assert {"unit", "line", "message_ids", "quote", "features"} <= set(hit["properties"])
    assert hit["properties"]["unit"]["enum"] == ["turn", "chunk"]
    evidence = next(v for k, v in schemas.items() if k.startswith("EvidenceOut"))
    assert "matched" in evidence["properties"]
    assert {"units_missing", "unit_vectors_missing"} <= set(schemas["StatusOut"]["properties"])


def test_search_example_validates():
    out = SearchOut.model_validate(SEARCH_EXAMPLE)
    assert out.hits[0].unit == "turn" and out.hits[0].quote and out.hits[0].message_ids == ["1311000000000000001"]
    assert out.model_dump(mode="json")["hits"][0]["message_ids"] == ["1311000000000000001"]
    mixed = SearchOut.model_validate(
        {**SEARCH_EXAMPLE, "hits": [{**SEARCH_EXAMPLE["hits"][0], "message_ids": [3, "x"]}]}
    )
    assert mixed.hits[0].message_ids == [3, "x"]  # a session message's number stays a number
