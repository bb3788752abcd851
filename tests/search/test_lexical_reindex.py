"""The lexical index follows its tokenizer: old indexes are queried with the tokenizer that
wrote them, and ``reindex_lexical`` / ``omoide reindex --lexical`` rebuild them (both backends)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app
from omoide.search.lexical_index import chunk_lexical_text
from omoide.stores.knowledge import ChunkDraft, SourceDraft
from omoide.stores.lexical_index import LexicalIndexStore, LexicalTable
from omoide.text import get_search_tokenizer, tokenize_for_search, tokenizer_named

from .helpers import T0

CURRENT = get_search_tokenizer().name
OLD = CURRENT.split(":")[0] + ":v1"  # the same family before Porter2 stemming (and synonym groups)


async def _add_chunk(mem: Memory, text: str, *, workspace: str = "g1") -> int:
    content = f"[{T0:%Y-%m-%d %H:%M}] **Mel (User)**: {text}"
    draft = ChunkDraft(
        content=content,
        lexical=" ".join(tokenize_for_search(chunk_lexical_text(content))),
        token_count=20,
        location={"message_ids": ["m1"]},
        channel_id="c1",
        author_ids=("u1",),
        started_at=T0,
        ended_at=T0,
    )
    _, ids = await mem.store.knowledge.add_source(
        SourceDraft(workspace_id=workspace, type="discord_channel", title="#c"), [draft]
    )  # type: ignore[attr-defined]
    return int(ids[0])


async def _age_index(mem: Memory) -> None:
    """Make the index look as an older omoide wrote it: v1 tokens everywhere, v1 recorded."""
    store = mem.store
    assert isinstance(store.lexical_index, LexicalIndexStore)
    old = tokenizer_named(OLD)
    assert old is not None
    for table in LexicalTable:
        rows = await store.lexical_index.lexical_batch(table, after_id=0, limit=1000)
        source = chunk_lexical_text if table is LexicalTable.CHUNKS else (lambda t: t)
        await store.lexical_index.rewrite_lexical(table, [(i, " ".join(old.tokenize(source(c)))) for i, c in rows])
    await store.lexical_index.set_lexical_tokenizer(OLD)


def test_tokenizers_by_name() -> None:
    assert tokenizer_named(CURRENT) is not None
    assert tokenizer_named("ngram:v1").tokenize("Caroline's parties") == ["caroline", "party"]  # type: ignore[union-attr]
    assert tokenizer_named("ngram:v2").tokenize("Caroline's parties") == ["carolin", "parti"]  # type: ignore[union-attr]
    assert tokenizer_named("mecab:v1") is None
    assert tokenizer_named("ngram:v9") is None


def test_chunk_lexical_text_drops_times_and_role_labels() -> None:
    content = (
        "[2026-01-19 10:00] **Alice (User)**: 今日の天気は？\n  続き\n"
        "[2026-01-19 10:01] **Assistant**: 晴れ\n"
        "[2026-01-19 10:02] **bob** (2/3): part two"
    )
    assert chunk_lexical_text(content) == "Alice\n今日の天気は？\n  続き\n\n晴れ\nbob\npart two"
    assert "2026" not in tokenize_for_search(chunk_lexical_text(content))


async def test_an_old_index_is_queried_with_its_own_tokenizer_until_rebuilt(mem: Memory) -> None:
    chunk = await _add_chunk(mem, "We threw two birthday parties for the puppies.")
    other = await _add_chunk(mem, "Nothing to see here.")
    await mem.remember("I went to three parties last week", workspace="g1", user="u1")
    await _age_index(mem)

    before = await mem.search("parties", workspace="g1", mode="lexical")
    assert [h.chunk.chunk_id for h in before.hits] == [chunk]
    assert any("omoide reindex --lexical" in n and OLD in n for n in before.notes)

    progress: list[tuple[str, int, int]] = []
    report = await mem.knowledge.reindex_lexical(on_rows=lambda t, done, total: progress.append((t.value, done, total)))
    assert report.previous == OLD
    assert report.tokenizer == CURRENT
    assert report.rows == {"knowledge_chunks": 2, "memories": 1}
    assert ("knowledge_chunks", 2, 2) in progress
    assert await mem.store.search.lexical_tokenizer() == CURRENT  # type: ignore[attr-defined]

    after = await mem.search("parties", workspace="g1", mode="lexical")
    assert [h.chunk.chunk_id for h in after.hits] == [chunk]
    assert not any("reindex" in n for n in after.notes)
    assert other not in [h.chunk.chunk_id for h in after.hits]
    # memories were re-tokenised too: a word form that only the new stemmer joins is found
    recalled = await mem.recall("party", workspace="g1", user="u1")
    assert [h.memory.content for h in recalled] == ["I went to three parties last week"]

    again = await mem.knowledge.reindex_lexical()  # idempotent
    assert again.previous == CURRENT
    assert again.rows == {"knowledge_chunks": 2, "memories": 1}


async def test_a_mixed_index_says_so_and_the_rebuild_fixes_it(mem: Memory) -> None:
    await _add_chunk(mem, "release plan for december")
    await _age_index(mem)
    await _add_chunk(mem, "another release note")  # written by today's tokenizer → "mixed"
    assert await mem.store.search.lexical_tokenizer() == "mixed"  # type: ignore[attr-defined]
    result = await mem.search("release", workspace="g1", mode="lexical")
    assert any("different tokenizers" in n for n in result.notes)
    await mem.knowledge.reindex_lexical()
    result = await mem.search("release", workspace="g1", mode="lexical")
    assert len(result.hits) == 2
    assert result.notes == [] or not any("tokenizer" in n for n in result.notes)


async def test_lexical_batches_resume_by_id(mem: Memory) -> None:
    ids = [await _add_chunk(mem, f"note number {i}") for i in range(5)]
    store = mem.store
    assert isinstance(store.lexical_index, LexicalIndexStore)
    first = await store.lexical_index.lexical_batch(LexicalTable.CHUNKS, after_id=0, limit=2)
    rest = await store.lexical_index.lexical_batch(LexicalTable.CHUNKS, after_id=first[-1][0], limit=100)
    assert [i for i, _ in first + rest] == ids
    assert await store.lexical_index.lexical_row_count(LexicalTable.CHUNKS) == 5
    await store.lexical_index.rewrite_lexical(
        LexicalTable.CHUNKS, [(ids[0], "zebra"), (10**9, "ghost")]
    )  # unknown id skipped
    hits = await mem.search("zebra", workspace="g1", mode="lexical")
    assert [h.chunk.chunk_id for h in hits.hits] == [ids[0]]


def test_cli_reindex_lexical(settings: Any) -> None:
    runner = CliRunner()
    db = settings.database_url
    result = runner.invoke(app, ["reindex", "--lexical", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["tokenizer"] == CURRENT
    assert report["rows"] == {"knowledge_chunks": 0, "memories": 0}
    both = runner.invoke(app, ["reindex", "--lexical", "--model", "hashing", "--db", db])
    assert both.exit_code != 0
    assert "runs on its own" in both.output


@pytest.mark.parametrize("args", [["reindex", "--help"]])
def test_cli_reindex_help_shows_both_examples(args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0
    assert "--lexical" in result.output
    assert "omoide reindex --lexical" in result.output


async def test_the_workers_rebuild_a_stale_index_on_start(mem: Memory) -> None:
    from omoide.search.lexical_index import lexical_index_is_stale

    await _add_chunk(mem, "We threw two birthday parties.")
    await _age_index(mem)
    assert await lexical_index_is_stale(mem.store.search)
    async with mem.workers(archive=False, expire=False, summarise=False) as runner:
        for _ in range(200):
            if not await lexical_index_is_stale(mem.store.search):
                break
            await asyncio.sleep(0.05)
        assert runner is not None
    assert await mem.store.search.lexical_tokenizer() == CURRENT  # type: ignore[attr-defined]
    result = await mem.search("parties", workspace="g1", mode="lexical")
    assert len(result.hits) == 1
    assert not any("reindex" in n for n in result.notes)


async def test_a_paraphrase_meets_its_evidence_through_a_synonym_group_in_hybrid_search_only(mem: Memory) -> None:
    """``果物`` finds the chunk that says ``フルーツ`` by their shared Sudachi synonym group
    (tokenizer v3) in hybrid search; a lexical-only search leaves synonym groups out."""
    fruit = await _add_chunk(mem, "生のフルーツはあまり買わないです。")
    await _add_chunk(mem, "明日は雨が降るらしい。")
    await mem.knowledge.embed()
    hybrid = await mem.search("果物", workspace="g1", mode="hybrid", explain=True)
    lexical_ranks = {h.chunk.chunk_id: (h.ranks or {}).get("lexical") for h in hybrid.hits}
    assert lexical_ranks.get(fruit) == 1
    assert not (await mem.search("果物", workspace="g1", mode="lexical")).hits
    assert (await mem.search("フルーツ", workspace="g1", mode="lexical")).hits[0].chunk.chunk_id == fruit
