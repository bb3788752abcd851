"""The MCP ``search`` and ``ask`` results with retrieval units, on hand-built hits: a turn hit's
text shows the message that matched and its context; the structured content carries ``unit``,
``line``, ``message_ids`` and ``quote`` and validates against the tool's output schema; an
answer cites each chunk once, with its matched messages."""

from __future__ import annotations

import jsonschema

from answers.turn_hits import FILTERS, HITS, RELEASE_CHUNK, FakePipeline, whole
from omoide.answers import Answerer, GenerationConfig
from omoide.mcp.results import AskOut, SearchOut, render_answer, render_search
from omoide.providers.local.extractive import ExtractiveChatModel
from omoide.search.pipeline import SearchResult


def test_search_result_shows_and_carries_the_matched_turn():
    found = SearchResult("延期", "hybrid", (HITS[0], whole(RELEASE_CHUNK, 2)), ("延期",), {})
    done = render_search(found)
    data = done.structured_content
    assert data is not None
    jsonschema.validate(data, SearchOut.model_json_schema(mode="serialization"))
    first, second = data["hits"]
    assert (first["unit"], first["line"], first["message_ids"]) == ("turn", 2, ["m3"])
    assert first["quote"].endswith("来週に延期します")
    assert (second["unit"], second["line"], second["quote"]) == ("chunk", None, None)
    assert second["message_ids"] == ["m1", "m2", "m3", "m4", "m5"]
    text = done.content[0].text  # type: ignore[union-attr]
    turn, chunk = text.split("\n\n2. ")
    assert turn.startswith("1. (#dev · 2025-11-15 13:30–13:34 UTC)\nMatched: [2025-11-15 13:32] **mika**: CI が")
    assert "\nIn context:\n[2025-11-15 13:30] **mika**: おはようございます" in turn
    assert "Matched:" not in chunk and "おはようございます" in chunk


async def test_ask_result_cites_each_chunk_once_with_its_matched_messages():
    answer = await Answerer(FakePipeline(HITS), ExtractiveChatModel, GenerationConfig()).ask(  # type: ignore[arg-type]
        "v0.4.0 のリリースが延期された理由は？", FILTERS
    )
    done = render_answer(answer)
    data = done.structured_content
    assert data is not None
    jsonschema.validate(data, AskOut.model_json_schema(mode="serialization"))
    assert data["evidence"] == 2
    cited = data["citations"][0]
    assert cited["number"] == 1 and cited["chunk_id"] == 12
    assert [m["line"] for m in cited["matched"]] == [2, 1, 3]
    text = done.content[0].text  # type: ignore[union-attr]
    sources = text.split("根拠:\n")[1]
    assert sources.count("[#1] ") == 1
    assert "\n  > [2025-11-15 13:32] **mika**: CI が不安定なので v0.4.0 のリリースは来週に延期します" in sources
