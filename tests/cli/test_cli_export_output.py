"""``-o FILE`` of ``omoide export --workspace W`` and ``omoide sessions export KEY`` never destroys data.

``omoide export --workspace W -o data/omoide.db`` truncated the database it was about to read
(1.1 MB → the 157-byte header line, "no rows"); ``omoide sessions export KEY -o data/omoide.db``
replaced it with the transcript; and an export that failed (a wrong --db) deleted an existing
``-o`` file it had already truncated. Now the database (and any other SQLite file) is refused as
an output before anything is opened, and the output is written beside the target and moved into
place only when the export is complete.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()
KEY = "discord:g1:c=c1:u=u1"


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "omoide.db"
    result = runner.invoke(app, ["sessions", "append", KEY, "--text", "こんにちは", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 0, result.output
    return path


def _said(output: str) -> str:
    """The output as one line, without rich's box borders (a wrapped error box splits words)."""
    return " ".join(output.replace("│", " ").split())


def _still_intact(path: Path) -> None:
    result = runner.invoke(app, ["sessions", "show", KEY, "--json", "--db", f"sqlite:///{path}"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["messages"][0]["content"][0]["text"] == "こんにちは"


@pytest.mark.parametrize(
    "command",
    [["export", "--workspace", "g1"], ["sessions", "export", KEY]],
    ids=["export --workspace", "sessions export"],
)
def test_the_database_itself_is_refused_as_the_output(command: list[str], database: Path, tmp_path: Path) -> None:
    size = database.stat().st_size
    for given in (database, Path("data/omoide.db"), tmp_path / "data" / ".." / "data" / "omoide.db"):
        result = runner.invoke(app, [*command, "-o", str(given), "--db", f"sqlite:///{database}"])
        assert result.exit_code == 2, result.output
        assert "the database" in _said(result.output)
        assert database.stat().st_size == size
    _still_intact(database)


def test_another_sqlite_database_is_not_overwritten(database: Path, tmp_path: Path) -> None:
    backup = tmp_path / "omoide-backup.db"
    assert runner.invoke(app, ["backup", str(backup), "--db", f"sqlite:///{database}"]).exit_code == 0
    before = backup.read_bytes()
    result = runner.invoke(app, ["export", "--workspace", "g1", "-o", str(backup), "--db", f"sqlite:///{database}"])
    assert result.exit_code == 2, result.output
    assert "SQLite database" in _said(result.output)
    assert backup.read_bytes() == before
    sqlite3.connect(backup).execute("SELECT count(*) FROM session_messages").fetchone()


def test_a_failed_export_leaves_an_existing_output_file_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    missing = tmp_path / "nope" / "missing.db"
    result = runner.invoke(app, ["export", "--workspace", "g1", "-o", str(notes), "--db", f"sqlite:///{missing}"])
    assert result.exit_code == 1, result.output
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no partial file left behind


def test_a_successful_export_replaces_the_output_file(database: Path, tmp_path: Path) -> None:
    out = tmp_path / "g1.jsonl"
    out.write_text("old\n", encoding="utf-8")
    result = runner.invoke(app, ["export", "--workspace", "g1", "-o", str(out), "--db", f"sqlite:///{database}"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[0]["table"] == "export" and any(r.get("table") == "session_messages" for r in rows)
    transcript = tmp_path / "chat.jsonl"
    result = runner.invoke(app, ["sessions", "export", KEY, "-o", str(transcript), "--db", f"sqlite:///{database}"])
    assert result.exit_code == 0, result.output
    assert json.loads(transcript.read_text(encoding="utf-8").splitlines()[0])["content"] == "こんにちは"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat.jsonl", "data", "g1.jsonl"]


@pytest.mark.parametrize(
    "command",
    [["export", "--workspace", "g1"], ["sessions", "export", KEY]],
    ids=["export --workspace", "sessions export"],
)
def test_an_output_in_a_missing_folder_or_a_folder_is_a_usage_error(
    command: list[str], database: Path, tmp_path: Path
) -> None:
    """Both printed a traceback (FileNotFoundError, IsADirectoryError)."""
    for given, said in (
        (tmp_path / "no" / "such" / "x.jsonl", "does not exist"),
        (tmp_path, "is a"),
    ):  # folder/directory
        result = runner.invoke(app, [*command, "-o", str(given), "--db", f"sqlite:///{database}"])
        assert result.exit_code == 2, result.output
        assert isinstance(result.exception, SystemExit)
        assert said in _said(result.output)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    "command", [["backup", "."], ["backup", ""], ["backup", "/"], ["export", "."], ["export", ""]], ids=repr
)
def test_a_backup_folder_without_a_name_is_an_existing_folder_not_a_traceback(
    command: list[str], database: Path
) -> None:
    """``omoide backup .`` (or ``''``, ``/``) raised ValueError: PosixPath('.') has an empty name."""
    result = runner.invoke(app, [*command, "--db", f"sqlite:///{database}"])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "already exists: choose a new backup path" in _said(result.output)
    _still_intact(database)


def test_an_empty_import_path_is_refused_not_read_as_the_current_folder(tmp_path: Path) -> None:
    """``omoide import ""`` (say, ``omoide import "$EXPORTS"`` with the variable unset) imported
    every export in the current folder: Path("") is ".". The tests run in tmp_path."""
    from importers.dce import ALICE, document, message, t, write

    write(tmp_path / "general.json", document([message(t(3, 9), "ここにあるエクスポート", ALICE)]))
    database = tmp_path / "omoide.db"
    result = runner.invoke(app, ["import", "", "--db", f"sqlite:///{database}"])
    assert result.exit_code == 2, result.output
    assert "empty path" in _said(result.output)
    assert not database.exists()  # nothing opened, nothing imported
    result = runner.invoke(app, ["import", ".", "--no-embed", "--db", f"sqlite:///{database}"])
    assert result.exit_code == 0 and "Imported 1 new message(s)" in result.stdout, result.output  # "." still works
