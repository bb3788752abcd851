"""`omoide archive / embed / status / sources / reindex / worker` as a user runs them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import typer
from typer.testing import CliRunner

from omoide.cli import app
from omoide.cli._durations import parse_duration

runner = CliRunner()


def omoide(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


# `--help` with an example for every command: tests/cli/test_cli_help.py walks the whole app.


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("30s", 30), ("15m", 900), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("1.5h", 5400)],
)
def test_durations(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "1h junk", "h"])
def test_bad_durations(text):
    with pytest.raises(typer.BadParameter, match="duration"):
        parse_duration(text)


def append(db: str, key: str, text: str, *, role: str = "user", message_id: str | None = None) -> None:
    args = ["sessions", "append", key, "--text", text, "--role", role, "--db", db, "--author", "42"]
    if message_id:
        args += ["--message-id", message_id]
    code, _, err = omoide(*args)
    assert code == 0, err


def test_archive_embed_status_sources_reindex(db_url):
    env = {"OMOIDE_EMBEDDER": "hashing"}
    key = "discord:111:c=222:u=42"
    for i in range(6):
        append(db_url, key, f"メッセージ {i}: 週末は山に登る予定です。天気が心配です。", message_id=str(900 + i))
        append(db_url, key, f"返事 {i}: 山の天気は変わりやすいので気をつけてください。", role="assistant")

    code, out, _ = omoide("archive", "--db", db_url, env=env)
    assert code == 0 and "No session is due" in out
    code, out, _ = omoide("archive", "--older-than", "0s", "--db", db_url, "--json", env=env)
    assert code == 0
    summary = json.loads(out)
    assert (summary["archived"], summary["sources"], summary["messages"]) == (1, 1, 12)

    code, out, _ = omoide("status", "--db", db_url, "--json", env=env)
    status = json.loads(out)
    assert status["sessions"]["archived"] == 1 and status["unarchived_messages"] == 0
    assert status["sources"]["pending"] == 1
    assert status["embedder"] == "hashing:v1@384" and status["chunks_to_embed"] == status["chunks"] == 2

    code, out, _ = omoide("embed", "--db", db_url, env=env)
    assert code == 0 and "Embedded 2 chunk(s) with hashing:v1@384: 1 source(s) ready" in out

    code, out, _ = omoide("sources", "--db", db_url, "--json", env=env)
    (source,) = json.loads(out)
    assert source["type"] == "discord_session" and source["status"] == "ready"
    assert source["origin_session"] == key and source["message_count"] == 12 and source["chunk_count"] == 2
    assert source["uri"] == "https://discord.com/channels/111/222/900"
    assert source["first_message_at"] < source["last_message_at"]
    code, out, _ = omoide("sources", "--db", db_url, env=env)
    assert code == 0 and "discord_session" in out

    code, out, _ = omoide("reindex", "--model", "hashing@32", "--db", db_url, env=env)
    assert code == 0 and "Embedded 2 chunk(s) with hashing:v1@32" in out and "OMOIDE_EMBEDDER=hashing@32" in out
    code, out, _ = omoide("status", "--db", db_url, env=env)
    assert "hashing:v1@32" in out and "(in use)" in out


def test_archive_now_and_empty_listings(sqlite_url):
    env = {"OMOIDE_EMBEDDER": "hashing"}
    assert omoide("migrate", "--db", sqlite_url)[0] == 0  # read-only commands need an existing database
    code, out, _ = omoide("sources", "--db", sqlite_url, env=env)
    assert code == 0 and "No knowledge sources yet" in out
    append(sqlite_url, "agent:default:a=notes", "メモ: 来週の会議は火曜日の午後三時からです。資料を準備すること。")
    code, out, _ = omoide("archive", "--now", "--db", sqlite_url, env=env)
    assert code == 0 and "Archived 1 session(s) into 1 source(s)" in out
    code, out, _ = omoide("status", "--db", sqlite_url, env=env)
    assert code == 0 and "chunks to embed with hashing:v1@384" in out


def test_bad_options_are_clear_errors(sqlite_url):
    code, _, err = omoide("archive", "--older-than", "soon", "--db", sqlite_url)
    assert code == 2 and "is not a duration" in err
    code, _, err = omoide("archive", "--now", "--older-than", "1h", "--db", sqlite_url)
    assert code == 2 and "either --now or --older-than" in err
    code, _, err = omoide("worker", "--only", "archiver,summarizer", "--db", sqlite_url)
    assert code == 1 and "unknown worker job(s) summarizer" in err
    code, out, _ = omoide("reindex", "--model", "nope:x", "--db", sqlite_url, "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "CONFIG_ERROR"


def test_reindex_accepts_what_status_and_providers_print(db_url):
    """`omoide status` prints model ids such as hashing:v1@384; `reindex --model` rejected them."""
    env = {"OMOIDE_EMBEDDER": "hashing@64"}
    append(db_url, "agent:default:a=notes", "メモ: 来週の会議は火曜日の午後三時からです。資料を準備すること。")
    code, out, err = omoide("archive", "--now", "--db", db_url, env=env)
    assert code == 0, err
    code, out, _ = omoide("status", "--db", db_url, "--json", env=env)
    printed = json.loads(out)["embedder"]
    assert printed == "hashing:v1@64"
    code, out, err = omoide("reindex", "--model", printed, "--db", db_url, env=env)
    assert code == 0, err + out
    assert "with hashing:v1@64" in out and "OMOIDE_EMBEDDER=hashing@64" in out  # the spec to set, not the id
    code, out, err = omoide("reindex", "--model", "hashing:v2@64", "--db", db_url, "--json", env=env)
    assert code == 1 and json.loads(out)["error"]["code"] == "CONFIG_ERROR"  # no such model: still refused

    code, out, _ = omoide("providers", env=env)
    assert "hashing@64" in out and "(default)" not in out
    code, out, _ = omoide("providers", env={})  # the default embedder: the spec cell is the bare spec
    assert "default;" in out
    (spec,) = [line.split("│")[2].strip() for line in out.splitlines() if line.startswith("│ embedder")]
    code, out, err = omoide("reindex", "--model", spec, "--db", db_url, "--json", env=env)
    assert code == 0, err + out
    code, out, _ = omoide("status", "--db", db_url, "--json", env={})  # the default embedder's model id
    default_id = json.loads(out)["embedder"]
    code, out, err = omoide("reindex", "--model", default_id, "--db", db_url, "--json", env=env)
    assert code == 0, err + out
    assert json.loads(out)["model"] == default_id
