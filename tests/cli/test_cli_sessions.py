"""The CLI as a user runs it: real databases, real commands, output read back."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()
KEY = "discord:g1:c=c1:u=u1"


def omoide(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# `--help` with an example for every command: tests/cli/test_cli_help.py walks the whole app.


def test_migrate_then_append_list_show(db_url):
    code, out, _ = omoide("migrate", "--db", db_url, "--json")
    assert code == 0
    assert json.loads(out)["schema_version"] >= 1
    code, out, _ = omoide("migrate", "--db", db_url)
    assert "up to date" in out

    code, out, _ = omoide(
        "sessions",
        "append",
        KEY,
        "--text",
        "こんにちは",
        "--author",
        "u1",
        "--message-id",
        "m1",
        "--db",
        db_url,
        "--json",
    )
    assert code == 0, out
    data = json.loads(out)
    assert data["created"] is True
    assert data["message"]["seq"] == 1
    # re-delivery of the same platform message id changes nothing
    code, out, _ = omoide("sessions", "append", KEY, "--text", "こんにちは", "--message-id", "m1", "--db", db_url)
    assert code == 0
    assert "already stored" in out
    code, out, _ = omoide("sessions", "append", KEY, "--role", "assistant", "--text", "やあ", "--db", db_url)
    assert code == 0

    code, out, _ = omoide("sessions", "list", "--db", db_url, "--json")
    [session] = json.loads(out)
    assert session["key"] == KEY
    assert session["last_seq"] == 2

    code, out, _ = omoide("sessions", "show", KEY, "--db", db_url, "--json")
    shown = json.loads(out)
    assert [m["content"][0]["text"] for m in shown["messages"]] == ["こんにちは", "やあ"]
    code, out, _ = omoide("sessions", "show", KEY, "--db", db_url)
    assert "こんにちは" in out


def test_errors_are_one_clean_line(sqlite_url):
    assert omoide("migrate", "--db", sqlite_url)[0] == 0  # read-only commands need an existing database
    code, out, err = omoide("sessions", "show", "not-a-key", "--db", sqlite_url)
    assert code == 1
    assert "Error:" in err
    assert "Traceback" not in out + err
    code, out, _ = omoide("sessions", "show", "discord:g1:c=c1:u=nobody", "--db", sqlite_url, "--json")
    assert code == 1
    assert json.loads(out)["error"]["code"] == "SESSION_NOT_FOUND"
    code, _, err = omoide("sessions", "append", KEY, "--text", "   ", "--db", sqlite_url)
    assert code == 1
    assert "empty" in err
    code, _, err = omoide("sessions", "append", KEY, "--role", "system", "--text", "x", "--db", sqlite_url)
    assert code == 2


def test_bad_database_url_is_a_config_error():
    code, _, err = omoide("sessions", "list", "--db", "mysql://nope")
    assert code == 1
    assert "OMOIDE_DATABASE_URL" in err


def test_oversized_message_is_rejected_and_nothing_stored(sqlite_url, monkeypatch):
    monkeypatch.setenv("OMOIDE_MAX_MESSAGE_BYTES", "1000")
    code, _, err = omoide("sessions", "append", KEY, "--text", "あ" * 2000, "--db", sqlite_url)
    assert code == 1
    assert "limit is 1,000" in err
    code, out, _ = omoide("sessions", "list", "--db", sqlite_url, "--json")
    assert json.loads(out) == [] or all(s["last_seq"] == 0 for s in json.loads(out))


def test_reset_delete_expire(sqlite_url):
    for text in ("one", "two"):
        omoide("sessions", "append", KEY, "--text", text, "--db", sqlite_url)
    code, out, _ = omoide("sessions", "reset", KEY, "--db", sqlite_url)
    assert code == 0
    assert "#2" in out
    code, out, _ = omoide("sessions", "show", KEY, "--db", sqlite_url, "--json")
    assert json.loads(out)["messages"] == []
    code, out, _ = omoide("sessions", "show", KEY, "--all", "--db", sqlite_url, "--json")
    assert len(json.loads(out)["messages"]) == 2
    code, out, _ = omoide("sessions", "expire", "--idle-hours", "0", "--db", sqlite_url)
    assert code == 0
    assert "Expired 1" in out
    code, out, _ = omoide("sessions", "delete", KEY, "--yes", "--db", sqlite_url)
    assert "Deleted" in out
    code, out, _ = omoide("sessions", "delete", KEY, "--yes", "--db", sqlite_url)
    assert "nothing deleted" in out


def test_export_import_round_trip(db_url, tmp_path):
    omoide(
        "sessions",
        "append",
        KEY,
        "--text",
        "覚えておいて",
        "--author",
        "u1",
        "--author-name",
        "さくら",
        "--message-id",
        "m1",
        "--db",
        db_url,
    )
    omoide("sessions", "append", KEY, "--role", "assistant", "--text", "はい", "--message-id", "m2", "--db", db_url)
    code, out, _ = omoide("sessions", "export", KEY, "--db", db_url)
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["type"] for r in lines] == ["user", "assistant"]
    path = tmp_path / "chat.jsonl"
    path.write_text(out, encoding="utf-8")

    target = "agent:default:a=copy"
    code, out, _ = omoide("sessions", "import", str(path), "--key", target, "--db", db_url)
    assert code == 0, out
    # platform message ids are unique per workspace, and "default" is another workspace than g1
    assert "Imported 2 new" in out
    code, out, _ = omoide("sessions", "show", target, "--db", db_url, "--json")
    copied = json.loads(out)["messages"]
    assert [(m["role"], m["author_name"], m["message_id"]) for m in copied] == [
        ("user", "さくら", "m1"),
        ("assistant", None, "m2"),
    ]
    # importing again adds nothing
    code, out, _ = omoide("sessions", "import", str(path), "--key", target, "--db", db_url)
    assert "Imported 0 new" in out


def test_import_json_reports_what_it_stored(sqlite_url, tmp_path):
    for i, text in enumerate(["一つ目", "二つ目", "三つ目"]):
        omoide("sessions", "append", KEY, "--text", text, "--message-id", f"m{i}", "--db", sqlite_url)
    code, out, _ = omoide("sessions", "export", KEY, "--db", sqlite_url)
    path = tmp_path / "notes.jsonl"
    path.write_text(out, encoding="utf-8")

    code, out, _ = omoide("sessions", "import", str(path), "--db", sqlite_url, "--json")
    assert code == 0, out
    first = json.loads(out)  # the whole of stdout is JSON: no progress bar, no prose
    assert first == {
        "key": "agent:default:a=notes",
        "session_id": first["session_id"],
        "messages": 3,
        "imported": 3,
        "already_stored": 0,
        "last_seq": 3,
    }
    assert isinstance(first["session_id"], int)
    code, out, _ = omoide("sessions", "import", str(path), "--db", sqlite_url, "--json")
    again = json.loads(out)
    assert (again["session_id"], again["imported"], again["already_stored"], again["last_seq"]) == (
        first["session_id"],
        0,
        3,
        3,
    )

    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    code, out, _ = omoide("sessions", "import", str(empty), "--db", sqlite_url, "--json")
    assert code == 0
    assert json.loads(out) == {
        "key": "agent:default:a=empty",
        "session_id": None,
        "messages": 0,
        "imported": 0,
        "already_stored": 0,
        "last_seq": None,
    }


def test_import_json_errors_are_json(sqlite_url, tmp_path):
    path = tmp_path / "broken.jsonl"
    good = '{"type": "user", "message": {"role": "user", "content": "ok"}}\n'
    path.write_text(good + "{not json\n" + good, encoding="utf-8")  # a bad line that is not the (torn) last one
    code, out, _ = omoide("sessions", "import", str(path), "--db", sqlite_url, "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "CORRUPT_TRANSCRIPT"
    assert "broken.jsonl" in error["message"] and "line" in error["message"]


def test_providers_lists_roles_and_says_what_is_missing(monkeypatch):
    code, out, _ = omoide("providers", "--json")
    assert code == 0
    rows = {row["role"]: row for row in json.loads(out)}
    assert rows["llm"]["spec"] == "extractive"
    assert rows["llm"]["is_default"] is True
    assert rows["embedder"]["usable"] is True
    monkeypatch.setenv("OMOIDE_LLM", "anthropic:claude-sonnet-4-5")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, _ = omoide("providers")
    assert code == 1
    assert "ANTHROPIC_API_KEY" in out


def test_a_skipped_torn_line_is_one_clean_warning_line(sqlite_url, tmp_path):
    """The real entry point: Python's warning display printed omoide's source path and line
    (``…/omoide/transcripts/_jsonl.py:85: TornLineWarning: …`` and ``_warn_torn(source, …)``)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import omoide

    path = tmp_path / "torn.jsonl"
    path.write_text('{"type":"user","content":"hi","ts":1}\n{"type":"assis', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env["PYTHONPATH"] = str(Path(omoide.__file__).resolve().parents[1])  # this tree's omoide
    env["PYTHONWARNINGS"] = "default"
    command = ["sessions", "import", str(path), "--db", sqlite_url]
    done = subprocess.run(
        [sys.executable, "-c", "from omoide.cli import main; main()", *command],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Imported 1 new message(s)" in done.stdout
    assert "Warning: " in done.stderr and "torn.jsonl, line 2: skipped a torn last line" in done.stderr
    assert "_jsonl.py" not in done.stderr and "_warn_torn" not in done.stderr, done.stderr


def test_keys_and_text_are_printed_as_stored_not_as_emoji(sqlite_url):
    """rich replaced emoji codes: the key ``discord:100:c=1:u=2`` printed as ``discord💯c=1:u=2``
    (in list, show, append and errors: a key the user cannot copy back), ``agent:x:a=y`` as
    ``agent❌a=y``, and a Slack message's ``:thumbsup:`` as 👍."""
    key = "discord:100:c=1:u=2"
    code, out, _ = omoide("sessions", "append", key, "--text", ":thumbsup: ok :x:", "--db", sqlite_url)
    assert code == 0 and f"Stored message #1 in {key}." in out, out
    code, out, _ = omoide("sessions", "list", "--db", sqlite_url)
    assert code == 0 and key in out and "💯" not in out, out
    code, out, _ = omoide("sessions", "show", key, "--db", sqlite_url)
    assert code == 0 and key in out and ":thumbsup: ok :x:" in out, out
    code, _, err = omoide("sessions", "reset", "agent:x:a=y", "--db", sqlite_url)
    assert code == 1 and "'agent:x:a=y'" in err and "❌" not in err, err
