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


def test_a_missing_user_summary_does_not_point_at_summarise_imported(tmp_path, monkeypatch):
    """`omoide summarise --imported` builds channel, thread and workspace summaries only, yet an
    empty ``summaries show U --scope user`` (docs/summaries.md's demo example) suggested it."""
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert runner.invoke(app, ["migrate", "--db", db]).exit_code == 0
    user = runner.invoke(app, ["summaries", "show", "u1", "--scope", "user", "--workspace", "g1", "--db", db])
    said = " ".join(user.stdout.split())
    assert user.exit_code == 0 and "No summary of user u1 yet" in said, said
    assert "live conversations" in said and "--imported` builds channel, thread and workspace summaries only" in said
    channel = runner.invoke(app, ["summaries", "show", "c1", "--workspace", "g1", "--db", db])
    assert "omoide summarise --imported" in " ".join(channel.stdout.split())  # right for a channel
