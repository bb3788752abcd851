"""Issue 17: an import is searchable by words at once, `ask` works while vectors fill in, and
progress is reported per item (import: messages; embedding: chunks per provider request)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from importers.dce import ALICE, BOB, GUILD, THREAD, document, message, t, write
from omoide import Memory
from omoide.cli import app
from omoide.knowledge import import_chunks, importing
from omoide.knowledge.embedding import EmbeddingProcessor
from omoide.stores.units import unit_lexical_of
from omoide.text import lexical_text, tokenize_for_search
from omoide.text.chat_lines import chunk_lexical_text

from .helpers import tuned

LINES = [
    "週末は山に登る予定です。天気が心配ですね",
    "I went camping with the kids last summer and we saw the Perseid meteor shower.",
    "東京都庁の展望台に行きました！\nとても良かったです",
    "Caroline's parties are painted   with   3.11 colours",
    "User",
    "ok",
]


def _export(tmp_path: Path, n: int, *, name: str = "general.json") -> Path:
    """``n`` messages by two people, a minute apart, a 3 h gap every 12 (several windows)."""
    msgs = []
    for i in range(n):
        when = t(3, 9) + timedelta(minutes=i) + timedelta(hours=3 * (i // 12))
        msgs.append(message(when, f"{LINES[i % len(LINES)]} #{i}", ALICE if i % 2 else BOB, increment=i))
    return write(tmp_path / name, document(msgs))


def test_one_tokenisation_per_line_gives_the_same_tokens(tmp_path: Path) -> None:
    """The chunk's tokens and its lines' come from one pass over the lines, equal to two passes."""
    from omoide.importers import message_windows, read_export

    export = read_export([_export(tmp_path, 120)])
    windows = message_windows(export.messages, max_tokens=200)
    drafts = [d for w in windows for d in importing.window_chunks(w, max_tokens=60)]  # some split, some (n/m) parts
    assert len(drafts) > len(windows)
    for draft in drafts:
        assert draft.lexical == lexical_text(tokenize_for_search(chunk_lexical_text(draft.content)))
        assert draft.unit_lexical == unit_lexical_of(draft.content, draft.location)


def test_lines_read_differently_fall_back_to_two_passes() -> None:
    content = "[2025-01-03 09:00] **User**: hello there\n[2025-01-03 09:01] **bob**: 天気"
    location = {"lines": [[0, 39, "1", "m1"], [40, 69, "2", "m2"]]}
    lexical, units = import_chunks._lexicals(content, location)
    assert lexical == lexical_text(tokenize_for_search(chunk_lexical_text(content)))
    assert units == unit_lexical_of(content, location)
    assert import_chunks._lexicals(content, {}) == (lexical, None)  # no line records


async def test_progress_per_message_and_long_conversations_in_several_sources(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "SOURCE_WINDOWS", 2)
    monkeypatch.setattr(importing, "BUILD_WINDOWS", 1)
    path = _export(tmp_path, 60)
    seen: list[tuple[int, int]] = []
    async with Memory.open(tuned(settings, embedder="hashing")) as mem:
        summary = await mem.knowledge.import_export(path, on_messages=lambda d, n: seen.append((d, n)))
        assert summary.new_messages == 60
        assert [n for _, n in seen] == [60] * len(seen)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == 60
        assert len(seen) >= 5  # one step per window, not one per conversation
        assert summary.sources == 3 and summary.conversations == 1  # 5 windows, 2 per source
        sources = await mem.knowledge.sources(workspace=GUILD["id"])
        assert sum(s.metadata["message_count"] for s in sources) == 60
        again = await mem.knowledge.import_export(path)
        assert (again.new_messages, again.sources) == (0, 0)
        cursor = await mem.knowledge.ingest_cursor(
            platform="discord", workspace=GUILD["id"], channel="1100000000000000010"
        )
        assert cursor is not None and cursor.messages == 60


async def test_searchable_at_once_and_ask_works_half_embedded(settings: Any, tmp_path: Path) -> None:
    async with Memory.open(tuned(settings, embedder="hashing", embed_claim_size=1)) as mem:
        await mem.knowledge.import_export(_export(tmp_path, 48, name="a.json"))
        await mem.knowledge.import_export(
            write(tmp_path / "b.json", document([message(t(9, 9), "Perseid meteor shower tonight", ALICE)]))
        )
        status = await mem.knowledge.status()
        assert status.chunks and not status.embedded.get(mem.embedder.model_id)
        found = await mem.search("Perseid meteor", workspace=GUILD["id"], mode="lexical")
        assert found.hits, "an import is searchable by words before any vector exists"
        hybrid = await mem.search("Perseid meteor", workspace=GUILD["id"])
        assert hybrid.hits

        # half embedded: one claim round of one source, then stop
        processor = mem.knowledge.embedding_processor()
        claimed = await mem.store.knowledge.claim_sources(limit=1, lease_seconds=60)
        from omoide.knowledge.embed_report import EmbedReport

        await processor._round(claimed, EmbedReport(model=processor.model), None, None)
        status = await mem.knowledge.status()
        model = mem.embedder.model_id
        assert 0 < status.embedded.get(model, 0) < status.chunks
        for mode in ("hybrid", "vector", "lexical"):
            answer = await mem.ask("Perseid meteor shower?", workspace=GUILD["id"], mode=mode)  # type: ignore[arg-type]
            assert answer.text
        answer = await mem.ask("Perseid meteor shower?", workspace=GUILD["id"])
        assert not answer.no_data and answer.citations


class _Counting:
    """Wraps an embedder: records the size of each ``embed_documents`` call."""

    def __init__(self, inner: Any, max_batch: int) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.max_batch = max_batch
        self.calls: list[int] = []

    async def embed_documents(self, texts: list[str]) -> Any:
        self.calls.append(len(texts))
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Any:
        return await self.inner.embed_query(text)


async def test_embedding_progress_moves_per_request_and_counts_each_chunk_once(settings: Any, tmp_path: Path) -> None:
    async with Memory.open(tuned(settings, embedder="hashing", embed_batch_size=64)) as mem:
        summary = await mem.knowledge.import_export(_export(tmp_path, 96))
        embedder = _Counting(mem.embedder, max_batch=8)
        processor = EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings)  # type: ignore[arg-type]
        steps: list[int] = []
        report = await processor.run(on_chunks=steps.append)
        assert report.chunks == summary.chunks == sum(steps)
        assert len(steps) > 1 and len(embedder.calls) == len(steps)  # one report per provider call
        assert all(n >= 1 for n in steps)
        # without a progress callback a batch is one call, as before
        plain = EmbeddingProcessor(mem.store.knowledge, _Counting(mem.embedder, max_batch=8), mem.settings)  # type: ignore[arg-type]
        await plain.backfill()  # nothing left to do
        assert plain.embedder.calls == []  # type: ignore[attr-defined]


def test_cli_import_no_embed_then_status_and_explain(tmp_path: Path) -> None:
    runner = CliRunner()
    db = f"sqlite:///{tmp_path / 'o.db'}"
    env = {"OMOIDE_EMBEDDER": "hashing"}
    path = _export(tmp_path, 30)
    result = runner.invoke(app, ["import", str(path), "--no-embed", "--db", db, "--json"], env=env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["chunks_waiting"] == data["chunks"] > 0
    result = runner.invoke(app, ["status", "--db", db, "--json"], env=env)
    status = json.loads(result.stdout)
    assert status["chunks_to_embed"] == data["chunks"]
    assert status["search_tokenizer"] in {"sudachi-core:v3", "ngram:v2"}
    assert status["lexical_index_tokenizer"] == status["search_tokenizer"]
    assert status["embedding_job"] is None
    result = runner.invoke(app, ["status", "--db", db], env=env)
    assert "search tokenizer" in result.stdout and "wait for vectors" in result.stdout
    result = runner.invoke(app, ["search", "camping", "--guild", GUILD["id"], "--explain", "--db", db], env=env)
    assert result.exit_code == 0 and result.stdout.strip() != "No results."
    assert f"{data['chunks']} of {data['chunks']} chunk(s) wait for vectors" in result.stderr
    result = runner.invoke(
        app, ["search", "camping", "--guild", GUILD["id"], "--explain", "--json", "--db", db], env=env
    )
    assert json.loads(result.stdout)["vectors_waiting"]["chunks_waiting"] == data["chunks"]

    result = runner.invoke(app, ["embed", "--db", db, "--json"], env=env)
    assert result.exit_code == 0, result.output
    status = json.loads(runner.invoke(app, ["status", "--db", db, "--json"], env=env).stdout)
    assert status["chunks_to_embed"] == 0
    job = status["embedding_job"]
    assert job["job"] == "embed" and job["running"] is False and job["done"] == data["chunks"]
    result = runner.invoke(app, ["search", "camping", "--guild", GUILD["id"], "--explain", "--db", db], env=env)
    assert "wait for vectors" not in result.stderr


async def _chunks_of(mem: Memory) -> list[tuple[str, str, tuple[str, ...] | None]]:
    out = []
    for source in sorted(await mem.knowledge.sources(workspace=GUILD["id"], limit=1000), key=lambda s: s.id):
        for chunk in await mem.store.knowledge.chunks_of_source(source.id):
            out.append((chunk.content, str(chunk.location.get("message_ids")), source.title))
    return out


@pytest.mark.parametrize("order", ["oldest-first", "reverse", "shuffled"])
async def test_streamed_import_writes_what_the_whole_read_writes(
    settings: Any, tmp_path: Path, order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streamed read (the default for DiscordChatExporter files) writes the same chunks as the
    whole read (``strict=True`` reads whole); a reversed file is sorted, a shuffled one never
    mixes its out-of-order tail into earlier windows."""
    import random

    from omoide.importers._stream import stream_plan

    monkeypatch.setattr(importing, "BUILD_WINDOWS", 2)
    msgs = [
        message(
            t(3, 9) + timedelta(minutes=i) + timedelta(hours=3 * (i // 9)), f"{LINES[i % 6]} {i}", ALICE, increment=i
        )
        for i in range(50)
    ]
    if order == "reverse":
        msgs.reverse()
    elif order == "shuffled":
        random.Random(3).shuffle(msgs[20:])
    path = write(tmp_path / "in" / "general.json", document(msgs))
    thread = write(tmp_path / "in" / "thread.json", document(msgs[:7], channel=THREAD))
    assert stream_plan([tmp_path / "in"]) is not None
    got = {}
    for strict in (False, True):
        db = tmp_path / f"{strict}.db"
        async with Memory.open(tuned(settings, embedder="hashing", database_url=f"sqlite:///{db}")) as mem:
            summary = await mem.knowledge.import_export([tmp_path / "in"], strict=strict)
            assert summary.new_messages == 57 and summary.conversations == 2
            got[strict] = await _chunks_of(mem)
    if order == "shuffled":
        assert sorted(got[False]) != sorted(got[True]) or got[False] == got[True]
        ids = [m for c in got[False] for m in eval(c[1])]
        assert sorted(ids) == sorted(m["id"] for m in [*msgs, *msgs[:7]])
    else:
        assert got[False] == got[True]
    assert path.exists() and thread.exists()


async def test_files_sharing_a_conversation_are_read_whole(tmp_path: Path) -> None:
    from omoide.importers._stream import stream_plan

    first = write(tmp_path / "a" / "general.json", document([message(t(3, 9), "one", ALICE)]))
    write(tmp_path / "a" / "general [part 2].json", document([message(t(3, 10), "two", ALICE, increment=1)]))
    assert stream_plan([tmp_path / "a"]) is None  # a partitioned channel: sorted together by the whole read
    assert stream_plan([first]) is not None
    assert stream_plan([tmp_path / "nope.json"]) is None


async def test_a_streamed_import_of_another_workspace_writes_nothing(settings: Any, tmp_path: Path) -> None:
    path = _export(tmp_path, 20)
    async with Memory.open(tuned(settings, embedder="hashing")) as mem:
        from omoide.errors import InvalidInput

        with pytest.raises(InvalidInput, match="only write to workspace"):
            await mem.knowledge.import_export(path, workspace="other", only_workspace=True)
        assert (await mem.knowledge.status()).chunks == 0
