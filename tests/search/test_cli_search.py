"""``omoide search`` and ``omoide ask`` as a user runs them, on a real database."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app
from omoide.cli.search import parse_time

from .helpers import seed, tuned

runner = CliRunner()


def omoide(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def seeded(settings, monkeypatch) -> str:
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")

    async def main() -> None:
        async with Memory.open(tuned(settings, embedder="hashing")) as mem:
            await seed(mem)

    asyncio.run(main())
    return str(settings.database_url)


@pytest.mark.parametrize("command", ["search", "ask"])
def test_help_with_example(command):
    code, out, _ = omoide(command, "--help")
    assert code == 0
    assert "--guild" in out and "--mode" in out and "--json" in out
    assert f"omoide {command}" in out.split("Example:")[1]


def test_search_json_with_filters(seeded):
    code, out, _ = omoide("search", "天気", "--guild", "g1", "--k", "2", "--json", "--db", seeded)
    assert code == 0, out
    data = json.loads(out)
    assert data["mode"] == "hybrid" and len(data["hits"]) == 2
    assert "明日の天気" in data["hits"][0]["content"]
    assert data["hits"][0]["jump_url"].startswith("https://discord.com/channels/g1/")
    code, out, _ = omoide(
        "search", "検索", "-g", "g1", "--channel", "dev", "--mode", "lexical", "--explain", "--json", "--db", seeded
    )
    data = json.loads(out)
    assert data["hits"] and {h["channel_id"] for h in data["hits"]} == {"dev"}
    assert "lexical" in data["hits"][0]["ranks"]
    code, out, _ = omoide(
        "search", "ラーメン", "-g", "g1", "--author", "u3", "--since", "2025-11-10", "--json", "--db", seeded
    )
    data = json.loads(out)
    assert [h["author_ids"] for h in data["hits"]] == [["u3"]]


def test_search_text_output(seeded):
    code, out, _ = omoide("search", "天気", "--guild", "g1", "--k", "1", "--db", seeded)
    assert code == 0
    assert out.startswith("1.") and "明日の天気は晴れ" in out and "#general" in out


def test_ask_offline_with_citations(seeded):
    code, out, _ = omoide("ask", "明日の天気は？", "--guild", "g1", "--json", "--db", seeded)
    assert code == 0, out
    data = json.loads(out)
    assert data["text"].startswith("（抽出モード: LLM なし）")
    assert data["citations"] and "天気" in data["citations"][0]["content"]
    assert {"embed", "search", "fetch", "generate"} <= set(data["timings_ms"])
    code, out, _ = omoide("ask", "明日の天気は？", "--guild", "g1", "--db", seeded)
    assert code == 0 and "根拠" in out and "[#1]" in out


def test_ask_no_data(seeded):
    code, out, _ = omoide("ask", "andyって誰？", "--guild", "empty-guild", "--db", seeded)
    assert code == 0
    assert out.startswith("まだ同期されたメッセージがありません")
    code, out, _ = omoide("ask", "Who is andy?", "--guild", "empty-guild", "--lang", "en", "--json", "--db", seeded)
    assert json.loads(out)["no_data"] is True


def test_bad_options(seeded):
    code, _, err = omoide("search", "x", "--guild", "g1", "--since", "yesterday", "--db", seeded)
    assert code == 2 and "--since" in err
    code, out, _ = omoide("search", "x", "--guild", "g1", "--mode", "fuzzy", "--json", "--db", seeded)
    assert code == 1 and json.loads(out)["error"]["code"] == "INVALID_INPUT"
    code, out, _ = omoide("ask", "x", "--guild", "g1", "--lang", "fr", "--json", "--db", seeded)
    assert code == 1 and "language" in json.loads(out)["error"]["message"]


def test_parse_time():
    assert parse_time("2025-11-08", option="--until", end_of_day=True).isoformat() == "2025-11-08T23:59:59.999999+00:00"
    assert parse_time("2025-11-08T12:00", option="--since").isoformat() == "2025-11-08T12:00:00+00:00"
    assert parse_time(None, option="--since") is None
    assert parse_time("7d", option="--since") is not None


def test_search_text_shows_ranks_not_raw_fusion_scores(seeded):
    """A reader cannot use an RRF score such as 0.0328; the text output numbers the hits, --explain adds the scores."""
    code, out, _ = omoide("search", "天気", "--guild", "g1", "--k", "2", "--db", seeded)
    assert code == 0, out
    assert not re.search(r"\b0\.\d{4}\b", out), out
    assert out.startswith("1.  ") and "\n2.  " in out
    code, out, _ = omoide("search", "天気", "--guild", "g1", "--k", "2", "--explain", "--db", seeded)
    assert re.search(r"score 0\.\d{4}; ranks: ", out), out


def test_piped_output_never_wraps_jump_urls(tmp_path, monkeypatch):
    """Piped to a file or grep, a Discord jump URL (88 characters) was wrapped at 80 columns."""
    from omoide.sample_data import discord_export_paths, sample_guild

    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    db = f"sqlite:///{tmp_path / 'sample.db'}"

    async def load() -> None:
        async with Memory.open(database_url=db, embedder="hashing") as mem:
            await mem.knowledge.import_export(discord_export_paths())

    asyncio.run(load())
    guild = sample_guild()[0]
    import omoide

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(omoide.__file__).parents[1]), env.get("PYTHONPATH")]))
    for command in (["search", "リリース 延期", "--k", "3"], ["ask", "v0.4.0 のリリースが延期された理由は？"]):
        done = subprocess.run(
            [sys.executable, "-c", "from omoide.cli import main; main()", *command, "--guild", guild, "--db", db],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        urls = re.findall(r"https://discord\.com/channels/\S*", done.stdout)
        assert urls, done.stdout
        for url in urls:
            assert re.fullmatch(rf"https://discord\.com/channels/{guild}/\d{{17,20}}/\d{{17,20}}", url), done.stdout


def test_a_mistyped_guild_is_named_and_workspaces_with_knowledge_are_suggested(seeded):
    """``--guild`` with a typo said only "no synced messages yet", without naming where it looked."""
    code, out, err = omoide("ask", "明日の天気は？", "--guild", "g11", "--db", seeded)
    assert code == 0 and out.startswith("まだ同期されたメッセージがありません")
    assert "'g11' has no knowledge" in err and "Workspaces with knowledge: g1, other" in err and "--guild g1" in err
    code, out, err = omoide("search", "天気", "--guild", "g11", "--json", "--db", seeded)
    assert code == 0 and json.loads(out)["hits"] == []  # stdout stays pure JSON; the note is on stderr
    assert "'g11' has no knowledge" in err and "--guild g1" in err
    # a workspace with knowledge whose filters matched nothing: no workspace note
    code, out, err = omoide("search", "天気", "--guild", "g1", "--channel", "nope", "--db", seeded)
    assert code == 0 and "No results." in out and "has no knowledge" not in err


def test_an_empty_database_says_how_to_get_knowledge(db_url, monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    assert omoide("migrate", "--db", db_url)[0] == 0
    code, _, err = omoide("ask", "天気は？", "--guild", "g1", "--db", db_url)
    assert code == 0 and "'g1' has no knowledge" in err and "omoide import" in err
