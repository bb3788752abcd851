"""Memory.build_context end to end: window, memories and knowledge in one budget, on both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app
from omoide.errors import ContextOverflow
from omoide.models import Message
from omoide.sample_data import discord_export_paths, sample_guild


@pytest.fixture
async def mem(settings: Any) -> AsyncIterator[Memory]:
    async with Memory.open(settings.model_copy(update={"embedder": "hashing"})) as m:
        yield m


async def test_window_memories_and_knowledge_fit_the_budget(mem: Memory):
    guild, _ = sample_guild()
    await mem.import_export(discord_export_paths())
    await mem.embed()
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
    await mem.archive(now=True)
    await mem.embed()
    window_seqs = {m.seq for m in await mem.history(key)}
    built = await mem.build_context(key, "ペンギン", budget_tokens=8000)
    for part in built.parts:
        if part.kind.value == "knowledge":
            chunk = await mem.store.fetch_chunks([part.ref["chunk_id"]])  # type: ignore[attr-defined]
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
