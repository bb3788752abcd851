"""``omoide search`` / ``omoide ask`` rendering of turn hits and ``--explain``, on hand-built hits
(the command runs for real; only the memory it opens is a stand-in returning these hits)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from typer.testing import CliRunner

from answers.turn_hits import HITS, RELEASE_CHUNK, WEATHER_CHUNK, turn, whole
from omoide.answers import Answerer, GenerationConfig
from omoide.cli import app
from omoide.cli.search import explain_lines
from omoide.providers.local.extractive import ExtractiveChatModel
from omoide.search.pipeline import SearchHit, SearchResult, StageScores

runner = CliRunner()


def explained(hit: SearchHit, **changes: Any) -> SearchHit:
    """``hit`` as ``explain=True`` returns it: ranks in each list, stage scores, features."""
    from dataclasses import replace

    return replace(
        hit,
        ranks={"lexical": 1, "vector": 3, "vector#2": 2, "fused": hit.rank, "unit": 1},
        scores=StageScores(vector=0.8123, lexical=7.25, fused=0.0325),
        score=0.0325,
        features={"unit_lexical": 0.5, "unit_vector": 0.61234, "position": 2.0},
        **changes,
    )


class FakeMemory:
    def __init__(self, hits: list[SearchHit]) -> None:
        self.hits = hits
        self.asked: dict[str, Any] = {}

    async def search(self, query: str, *, explain: bool = False, **_: Any) -> SearchResult:
        self.asked["explain"] = explain
        hits = tuple(explained(h) if explain else h for h in self.hits)
        return SearchResult(query, "hybrid", hits, (query,), {"search": 1.0})

    async def ask(self, question: str, *, workspace: str, **_: Any) -> Any:
        from omoide.stores.search import SearchFilters

        pipeline = type("P", (), {"search_evidence": lambda _s, q, f, **k: self.search(q)})()
        answerer = Answerer(pipeline, ExtractiveChatModel, GenerationConfig())
        return await answerer.ask(question, SearchFilters(workspace_id=workspace))


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> FakeMemory:
    mem = FakeMemory(HITS)

    @asynccontextmanager
    async def open_existing_memory(_db: str | None) -> AsyncIterator[FakeMemory]:
        yield mem

    monkeypatch.setattr("omoide.cli.search.open_existing_memory", open_existing_memory)
    return mem


def omoide(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_turn_hit_prints_its_message_not_the_whole_chunk(memory: FakeMemory):
    code, out, _ = omoide("search", "延期", "--guild", "g1")
    assert code == 0, out
    assert memory.asked["explain"] is False
    first = out.split("\n2.  ")[0]
    assert first.startswith("1.  #dev · 2025-11-15 13:30–13:34 UTC")
    assert "[2025-11-15 13:32] **mika**: CI が不安定なので v0.4.0 のリリースは来週に延期します" in first
    assert "おはようございます" not in first  # the rest of the chunk is context, in --json
    assert not re.search(r"\b0\.\d{4}\b", out) and "ranks:" not in out and "features" not in out


def test_chunk_hit_prints_the_chunk(monkeypatch: pytest.MonkeyPatch, memory: FakeMemory):
    memory.hits = [whole(WEATHER_CHUNK, 1)]
    code, out, _ = omoide("search", "天気", "--guild", "g1")
    assert code == 0 and "明日の天気は晴れです" in out and "傘はいらないね" in out


def test_explain_shows_unit_line_ranks_scores_and_features(memory: FakeMemory):
    code, out, _ = omoide("search", "延期", "--guild", "g1", "--explain")
    assert code == 0, out
    assert memory.asked["explain"] is True
    first = out.split("\n2.  ")[0]
    assert "score 0.0325; ranks: lexical=1, vector=3, vector#2=2, fused=1, unit=1" in first
    assert "scores: fused=0.0325, vector=0.8123, lexical=7.2500" in first
    assert "unit: turn · chunk 12 · line 2 · message m3" in first
    assert "features: unit_lexical=0.5, unit_vector=0.6123, position=2" in first


def test_explain_lines_of_a_chunk_hit_without_ranks():
    hit = SearchHit(WEATHER_CHUNK, 1, 0.5, StageScores(rerank=0.5), ranks={}, message_ids=("w1", "w2"))
    assert explain_lines(hit) == [
        "score 0.5000; ranks: -",
        "scores: rerank=0.5000",
        "unit: chunk · chunk 7 · messages w1, w2",
    ]
    many = SearchHit(WEATHER_CHUNK, 1, 0.5, StageScores(), message_ids=tuple(range(8)))
    assert explain_lines(many)[-1] == "unit: chunk · chunk 7 · messages 0, 1, 2, 3, 4 (+3)"


def test_explain_json_has_the_new_fields(memory: FakeMemory):
    code, out, _ = omoide("search", "延期", "--guild", "g1", "--explain", "--json")
    assert code == 0, out
    hit = json.loads(out)["hits"][0]
    assert hit["unit"] == "turn" and hit["line"] == 2 and hit["message_ids"] == ["m3"]
    assert hit["quote"].endswith("来週に延期します")
    assert hit["ranks"]["unit"] == 1 and hit["scores"]["fused"] == 0.0325
    assert hit["features"] == {"unit_lexical": 0.5, "unit_vector": 0.61234, "position": 2.0}
    assert hit["chunk_id"] == 12 and "lines" not in hit["location"]


def test_ask_cites_each_chunk_once_with_the_matched_lines(memory: FakeMemory):
    code, out, _ = omoide("ask", "v0.4.0 のリリースが延期された理由は？", "--guild", "g1")
    assert code == 0, out
    answer, _, sources = out.partition("根拠\n")
    assert "来週に延期します」 [#1]" in answer
    assert sources.count("[#1] ") == 1
    assert "    > [2025-11-15 13:32] **mika**: CI が不安定なので v0.4.0 のリリースは来週に延期します" in sources
    assert "    > [2025-11-15 13:31] **ren**: v0.4.0 のリリースはどうなりましたか？" in sources


def test_ask_json_groups_turns_by_chunk(memory: FakeMemory):
    memory.hits = [turn(RELEASE_CHUNK, 2, 1), turn(RELEASE_CHUNK, 1, 2)]
    code, out, _ = omoide("ask", "v0.4.0 のリリースが延期された理由は？", "--guild", "g1", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert [e["chunk_id"] for e in data["evidence"]] == [12]
    assert [m["line"] for m in data["citations"][0]["matched"]] == [2, 1]
