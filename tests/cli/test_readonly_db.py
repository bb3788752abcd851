"""A command that only reads must not create the database (issue 14: ``omoide status --db
sqlite:///nonexistent/dir/x.db`` exited 0 after creating the directory tree)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()

READ_ONLY = [
    ["status"],
    ["sources"],
    ["search", "天気", "--guild", "g1"],
    ["ask", "天気は？", "--guild", "g1"],
    ["memory", "search", "誕生日", "--workspace", "g1", "--user", "u1"],
    ["memory", "list", "--workspace", "g1", "--user", "u1"],
    ["memory", "get", "1", "--workspace", "g1", "--user", "u1"],
    ["memory", "update", "1", "新しい内容", "--workspace", "g1", "--user", "u1"],
    ["memory", "delete", "1", "--workspace", "g1", "--user", "u1"],
    ["sessions", "list"],
    ["sessions", "show", "agent:default:a=notes"],
    ["sessions", "export", "agent:default:a=notes"],
    ["sessions", "reset", "agent:default:a=notes"],
    ["sessions", "delete", "agent:default:a=notes", "--yes"],
    ["context", "agent:default:a=notes"],
    ["summaries", "show", "c1", "--workspace", "g1"],
]


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: " ".join(c[:2]))
def test_a_read_only_command_refuses_a_missing_sqlite_database(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    result = runner.invoke(app, [*command, "--db", f"sqlite:///{missing}"])
    assert result.exit_code == 1, result.output
    said = "".join(result.stderr.split())  # the error console wraps long lines
    assert str(missing) in said and "`omoidedemo`" in said and "`omoidemigrate`" in said
    assert not (tmp_path / "nonexistent").exists()  # nothing created, not even the directory


def test_the_default_database_is_checked_too_and_json_errors_name_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["status", "--json"])  # default sqlite:///./data/omoide.db in the test's cwd
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "NOT_FOUND" and str(tmp_path / "data" / "omoide.db") in error["message"]
    assert not (tmp_path / "data").exists()


def test_commands_that_write_still_create_the_database(tmp_path: Path) -> None:
    first = tmp_path / "new" / "a.db"
    result = runner.invoke(app, ["migrate", "--db", f"sqlite:///{first}"])
    assert result.exit_code == 0 and first.is_file(), result.output
    second = tmp_path / "other" / "b.db"
    add = ["memory", "add", "誕生日は3月15日", "--workspace", "g1", "--user", "u1", "--db", f"sqlite:///{second}"]
    assert runner.invoke(app, add).exit_code == 0 and second.is_file()
    # and once it exists, the read-only commands work on it
    result = runner.invoke(app, ["memory", "list", "--workspace", "g1", "--user", "u1", "--db", f"sqlite:///{second}"])
    assert result.exit_code == 0 and "誕生日は3月15日" in result.stdout
    result = runner.invoke(app, ["status", "--db", f"sqlite:///{first}", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["chunks"] == 0


def test_read_only_commands_work_on_an_existing_database_on_each_backend(db_url: str) -> None:
    assert runner.invoke(app, ["migrate", "--db", db_url]).exit_code == 0
    for command in (["status", "--json"], ["sessions", "list"], ["search", "天気", "--guild", "g1"]):
        result = runner.invoke(app, [*command, "--db", db_url])
        assert result.exit_code == 0, result.output


def _foreign_database(path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.commit()
    conn.close()


def _tables(path: Path) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return sorted(row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: " ".join(c[:2]))
def test_a_read_only_command_leaves_another_applications_sqlite_database_alone(
    command: list[str], tmp_path: Path
) -> None:
    """``omoide status --db sqlite:///places.sqlite`` added omoide's whole schema to someone else's database."""
    other = tmp_path / "places.sqlite"
    _foreign_database(other)
    result = runner.invoke(app, [*command, "--db", f"sqlite:///{other}"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    assert "not an omoide database" in said and "notes" in said, said
    assert _tables(other) == ["notes"]  # nothing added


def test_a_read_only_command_does_not_turn_an_empty_file_into_a_database(tmp_path: Path) -> None:
    empty = tmp_path / "notes.txt"
    empty.write_bytes(b"")
    result = runner.invoke(app, ["sessions", "list", "--db", f"sqlite:///{empty}", "--json"])
    assert result.exit_code == 1, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "NOT_FOUND" and "empty file" in error["message"] and str(empty) in error["message"]
    assert empty.read_bytes() == b""


def test_a_read_only_command_names_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    text = tmp_path / "export.json"
    text.write_text('{"guild": {}}', encoding="utf-8")
    result = runner.invoke(app, ["status", "--db", f"sqlite:///{text}"])
    assert result.exit_code == 1, result.output
    assert "not a SQLite database" in " ".join(result.stderr.split())
    assert text.read_text(encoding="utf-8") == '{"guild": {}}'


WRITING = [
    ["migrate"],
    ["memory", "add", "誕生日は3月15日", "--workspace", "g1", "--user", "u1"],
    ["sessions", "append", "agent:default:a=notes", "--text", "hello"],
]


@pytest.mark.parametrize("command", WRITING, ids=lambda c: " ".join(c[:2]))
def test_a_writing_command_leaves_another_applications_sqlite_database_alone(
    command: list[str], tmp_path: Path
) -> None:
    """``omoide migrate`` / ``import`` / ``memory add --db sqlite:///places.sqlite`` added omoide's tables to
    another application's database; they now refuse it (a new or empty file is still made a database)."""
    other = tmp_path / "places.sqlite"
    _foreign_database(other)
    result = runner.invoke(app, [*command, "--db", f"sqlite:///{other}"])
    assert result.exit_code == 1, result.output
    said = " ".join(result.stderr.split())
    assert "another application" in said and "notes" in said and "new file" in said, said
    assert _tables(other) == ["notes"]  # nothing added
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert runner.invoke(app, [*command, "--db", f"sqlite:///{empty}"]).exit_code == 0
    assert "schema_migrations" in _tables(empty)
