"""``omoide summarise`` and ``omoide summaries show`` as a user runs them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()


def test_summarise_then_show(tmp_path, monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    db = f"sqlite:///{tmp_path / 's.db'}"
    key = "discord:g1:c=c1:u=u1"
    for text in ("来週の勉強会は木曜19時から渋谷の会議室です。", "発表は pgvector の HNSW インデックスについてです。"):
        runner.invoke(app, ["sessions", "append", key, "--role", "user", "--text", text, "--author", "u1", "--db", db])
    result = runner.invoke(app, ["summarise", "--now", "--json", "--db", db])
    assert result.exit_code == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert "channel:c1" in data["updated"] and data["workspaces"] == 1
    shown = runner.invoke(app, ["summaries", "show", "c1", "--workspace", "g1", "--db", db])
    assert shown.exit_code == 0 and "long_term" in shown.stdout and "short_term" in shown.stdout
    ws = runner.invoke(app, ["summaries", "show", "--scope", "workspace", "--workspace", "g1", "--json", "--db", db])
    assert json.loads(ws.stdout)[0]["scope"] == "workspace"
    missing = runner.invoke(app, ["summaries", "show", "--workspace", "g1", "--db", db])
    assert missing.exit_code != 0 and "channel id" in (missing.stdout + missing.stderr)
    for command in (["summarise"], ["summaries", "show"]):
        assert "Example:" in runner.invoke(app, [*command, "--help"]).stdout
