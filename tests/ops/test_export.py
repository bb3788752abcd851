"""Export of a workspace or one user as JSONL: library, CLI and HTTP, on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app as cli_app
from omoide.errors import InvalidInput
from omoide.models import Message
from omoide.ops.export import ExportScope, export_rows
from omoide.server import create_app

from .conftest import filled, make_settings


def _tables(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows[1:]:
        out.setdefault(row["table"], []).append(row)
    return out


async def _export(url: str, workspace: str, user: str | None = None) -> list[dict[str, Any]]:
    return [row async for row in export_rows(url, ExportScope(workspace, user))]


async def test_a_user_export_holds_their_data_and_nobody_elses(settings: Any, tmp_path: Path) -> None:
    url = settings.database_url
    await filled(url, tmp_path)
    async with Memory.open(make_settings(url, tmp_path)) as mem:  # a conversation of two people, archived
        key = mem.session_key(platform="discord", workspace="g1", channel="shared", policy="channel")
        await mem.append(key, Message.user("u1 の秘密: 猫が好きです。毎朝いっしょに散歩しています。", author_id="u1"))
        await mem.append(key, Message.user("u2 says: dogs are better, and I walk mine twice a day.", author_id="u2"))
        await mem.knowledge.archive(now=True)

    rows = await _export(url, "g1", "u1")
    assert rows[0]["table"] == "export" and rows[0]["user"] == "u1" and rows[0]["workspace"] == "g1"
    tables = _tables(rows)
    assert {m["content"] for m in tables["memories"]} == {"u1 はコーヒーが好き", "u1 lives in Kyoto"}
    assert [e["action"] for e in tables["memory_events"]].count("created") == 2
    assert [s["scope_id"] for s in tables["summaries"]] == ["u1"]
    messages = tables["session_messages"]
    assert any(m["author_id"] == "u1" for m in messages)
    assert all(m["author_id"] in ("u1", "bot") for m in messages), "only their messages and the bot's replies to them"
    shared = [c for c in tables["knowledge_chunks"] if "猫" in (c["content"] or "")]
    assert shared and all("dogs" not in (c["content"] or "") for c in tables["knowledge_chunks"])
    assert all(line["text"] for c in shared for line in c["lines"])
    shared_session = next(r for r in tables["sessions"] if r["channel_id"] == "shared")
    assert "context_summary" not in shared_session and "members" not in shared_session
    own = next(r for r in tables["sessions"] if r["user_id"] == "u1")
    assert "members" in own
    assert all("members" not in r for r in tables["knowledge_sources"])
    dumped = json.dumps(rows, ensure_ascii=False)
    assert "u2 has a cat" not in dumped and "u2 plays go" not in dumped and "u9" not in dumped
    assert "embedding" not in dumped and "lexical" not in dumped and "token_hash" not in dumped


async def test_a_workspace_export_holds_the_whole_workspace_only(settings: Any, tmp_path: Path) -> None:
    url = settings.database_url
    await filled(url, tmp_path)
    tables = _tables(await _export(url, "g1"))
    assert {m["user_id"] for m in tables["memories"]} == {"u1", "u2"}
    assert {s["workspace_id"] for rows in tables.values() for s in rows} == {"g1"}
    assert {"sessions", "session_messages", "knowledge_sources", "knowledge_chunks", "memories"} <= set(tables)
    other = _tables(await _export(url, "g2"))
    assert [m["content"] for m in other["memories"]] == ["u9 writes Rust"]
    with pytest.raises(InvalidInput):
        ExportScope(" ")


def test_cli_export_writes_jsonl_to_a_file_or_stdout(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    asyncio.run(filled(url, tmp_path))
    runner = CliRunner()
    out = tmp_path / "u1.jsonl"
    result = runner.invoke(cli_app, ["export", "--workspace", "g1", "--user", "u1", "-o", str(out), "--db", url])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["table"] == "export" and {r["table"] for r in rows[1:]} >= {"memories", "session_messages"}
    result = runner.invoke(cli_app, ["export", "-w", "g2", "--db", url])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert any(r.get("content") == "u9 writes Rust" for r in lines)
    missing = runner.invoke(cli_app, ["export", "-w", "g1", "--db", f"sqlite:///{tmp_path / 'nope.db'}"])
    assert missing.exit_code == 1 and "no SQLite database" in missing.output


async def test_http_export_is_scoped_to_the_keys_workspace(settings: Any, tmp_path: Path) -> None:
    url = settings.database_url
    await filled(url, tmp_path)
    async with Memory.open(make_settings(url, tmp_path)) as mem:
        a = (await mem.api_keys.create("g1")).token
        b = (await mem.api_keys.create("g2")).token
        app = create_app(mem, workers=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://omoide.test") as client:
            whole = await client.get("/v1/export", headers={"Authorization": f"Bearer {a}"})
            user = await client.get("/v1/users/u1/export", headers={"Authorization": f"Bearer {a}"})
            other = await client.get("/v1/users/u1/export", headers={"Authorization": f"Bearer {b}"})
            anonymous = await client.get("/v1/export")
    assert whole.status_code == 200 and whole.headers["content-type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in whole.text.splitlines()]
    assert rows[0]["workspace"] == "g1" and {r["workspace_id"] for r in rows[1:]} == {"g1"}
    assert 'filename="omoide-g1.jsonl"' in whole.headers["content-disposition"]
    mine = _tables([json.loads(line) for line in user.text.splitlines()])
    assert {m["content"] for m in mine["memories"]} == {"u1 はコーヒーが好き", "u1 lives in Kyoto"}
    theirs = [json.loads(line) for line in other.text.splitlines()]
    assert theirs[0]["workspace"] == "g2" and len(theirs) == 1, "another workspace's key sees none of g1's data"
    assert anonymous.status_code == 401
