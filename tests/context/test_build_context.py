"""Memory.build_context end to end: window, memories and knowledge in one budget, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app
from omoide.errors import ContextOverflow, InvalidInput
from omoide.models import Message
from omoide.sample_data import discord_export_paths, sample_guild


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as m:
        yield m


async def test_window_memories_and_knowledge_fit_the_budget(mem: Memory):
    guild, _ = sample_guild()
    await mem.knowledge.import_export(discord_export_paths())
    await mem.knowledge.embed()
    await mem.remember("もくもく会には毎回参加したい", workspace=guild, user="u1")
    key = mem.session_key(platform="discord", workspace=guild, channel="c1", user="u1")
    await mem.append(key, Message.user("こんにちは", author_id="u1"))
    await mem.append(key, Message.assistant("こんにちは！"))
    await mem.append(key, Message.user("もくもく会の会場はどこ？", author_id="u1"))

    built = await mem.build_context(key, budget_tokens=4000)
    labels = [p.label for p in built.parts]
    assert labels[0] == "m1" and any(label.startswith("k") for label in labels)
    assert "もくもく会には毎回参加したい" in built.system and "[k1]" in built.system
    assert "Hive Shibuya" in built.system  # the answering message was retrieved
    assert [m.text for m in built.messages] == ["こんにちは", "こんにちは！", "もくもく会の会場はどこ？"]
    assert built.tokens == mem.token_counter.count_messages(list(built.messages), system=built.system) <= 4000

    small = await mem.build_context(key, budget_tokens=300)
    assert small.tokens <= 300 and small.messages[-1].text == "もくもく会の会場はどこ？"
    assert len(small.parts) < len(built.parts) and small.dropped
    with pytest.raises(ContextOverflow):
        await mem.build_context(key, budget_tokens=20)


async def test_knowledge_still_in_the_window_is_left_out(mem: Memory):
    key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    for i in range(6):
        await mem.append(key, Message.user(f"ペンギンの話 {i}: 南極のペンギンは泳ぎが得意", author_id="u1"))
        await mem.append(key, Message.assistant(f"返事 {i}: そうですね、ペンギンは速いです"))
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    window_seqs = {m.seq for m in await mem.history(key)}
    built = await mem.build_context(key, "ペンギン", budget_tokens=8000)
    for part in built.parts:
        if part.kind.value == "knowledge":
            chunk = await mem.store.search.fetch_chunks([part.ref["chunk_id"]])  # type: ignore[attr-defined]
            loc = chunk[0].location
            assert not set(range(loc["seq_start"], loc["seq_end"] + 1)) <= window_seqs


def test_context_command(tmp_path, monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    db = f"sqlite:///{tmp_path / 'c.db'}"
    runner = CliRunner()
    key = "discord:g1:c=c1:u=u1"
    runner.invoke(app, ["memory", "add", "好きな色は青", "--workspace", "g1", "--user", "u1", "--db", db])
    runner.invoke(
        app,
        ["sessions", "append", key, "--role", "user", "--text", "好きな色を覚えてる？", "--author", "u1", "--db", db],
    )
    result = runner.invoke(app, ["context", key, "--budget", "2000", "--db", db])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "好きな色は青" in result.stdout and "tokens" in result.stdout
    result = runner.invoke(app, ["context", key, "--json", "--db", db])
    assert '"parts"' in result.stdout
    help_text = runner.invoke(app, ["context", "--help"]).stdout
    assert "Example:" in help_text


async def test_summaries_written_by_the_summariser_are_in_the_context(mem: Memory):
    """Seed 003's summaries reach the prompt: workspace and channel long-term, the channel's short-term."""
    channel = mem.session_key(platform="discord", workspace="g1", channel="c1", user=None, policy="channel")
    lines = [
        ("u1", "来週の勉強会は渋谷の Hive で19時からです"),
        ("u2", "了解、ノートパソコンを持っていきます"),
        ("u1", "テーマは PostgreSQL の HNSW インデックスです"),
        ("u3", "資料は前日までに共有します"),
    ]
    for i, (who, text) in enumerate(lines):
        await mem.append(channel, Message.user(text, author_id=who, author_name=who, message_id=f"s{i}"))
    report = await mem.summaries.run()
    assert report.as_log()  # it ran
    key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await mem.append(key, Message.user("勉強会のテーマは？", author_id="u1"))

    built = await mem.build_context(key, budget_tokens=8000)
    kinds = {p.kind.value: p for p in built.parts}
    assert {"workspace_summary", "channel_summary", "short_term_summary"} <= kinds.keys()
    for kind in ("workspace_summary", "channel_summary", "short_term_summary"):
        part = kinds[kind]
        assert part.ref["version"] >= 1 and part.ref["summary_id"]
        assert part.text.strip() and part.text in built.system  # labelled in the prompt the model sees
    assert "HNSW" in kinds["short_term_summary"].text or "勉強会" in kinds["short_term_summary"].text
    stored = await mem.summary(workspace="g1", scope="channel", scope_id="c1", kind="short_term")
    assert stored is not None and stored.content == kinds["short_term_summary"].text


async def test_a_bad_query_or_language_is_invalid_input_and_creates_no_session(mem: Memory):
    """Typed errors naming the argument (not KeyError / AttributeError), checked before the session is made."""
    key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    with pytest.raises(InvalidInput, match="language"):
        await mem.build_context(key, "来週の勉強会は？", language="fr")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="query"):
        await mem.build_context(key, 42)  # type: ignore[arg-type]
    assert await mem.sessions.list_sessions(workspace="g1") == []
    built = await mem.build_context(key, "来週の勉強会は？", language="en")
    assert built.budget > 0


async def test_a_long_newest_message_is_looked_up_by_its_beginning_not_refused(mem: Memory):
    """Without a query the newest user message is the lookup; a message may be longer than a query
    may (a pasted log), so its first 10,000 characters are looked up instead of refusing the turn."""
    key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await mem.remember("ログの読み方: まず最初のエラーを見る", workspace="g1", user="u1")
    long = "ログの読み方を教えて。" + "ERROR 接続が切れました\n" * 1000
    assert len(long) > 10_000
    await mem.append(key, Message.user(long, author_id="u1"))
    built = await mem.build_context(key, budget_tokens=100_000)
    assert [m.text for m in built.messages] == [long]
    assert "ログの読み方: まず最初のエラーを見る" in built.system
    with pytest.raises(InvalidInput, match="10000"):  # a query the caller passes is still held to the limit
        await mem.build_context(key, long)
