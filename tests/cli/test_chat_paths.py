"""``omoide chat`` with a transcripts folder it cannot use: a clear error, not a traceback.

``omoide chat --transcripts ./notes.db`` (a file) printed ``NotADirectoryError`` and ``--transcripts
/proc`` a ``FileNotFoundError`` traceback, as did ``OMOIDE_TRANSCRIPTS_DIR`` set to either. Piped
stdin drives the REPL here (the plain line reader); tests/cli/test_repl.py drives it on a terminal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()


def _said(output: str) -> str:
    return " ".join(output.split())


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("not a folder\n", encoding="utf-8")
    return path


def test_a_file_given_as_the_transcripts_folder_is_a_clear_error(a_file: Path) -> None:
    result = runner.invoke(app, ["chat", "--transcripts", str(a_file)], input="hello\n/exit\n")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # no NotADirectoryError
    said = _said(result.stderr)
    assert str(a_file) in said and "not a folder" in said and "--transcripts" in said
    assert a_file.read_text(encoding="utf-8") == "not a folder\n"


def test_the_setting_is_named_when_it_came_from_the_environment(a_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_TRANSCRIPTS_DIR", str(a_file))
    result = runner.invoke(app, ["chat"], input="/list\n")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "OMOIDE_TRANSCRIPTS_DIR" in _said(result.stderr)


def test_a_folder_that_cannot_be_created_is_a_clear_error(a_file: Path) -> None:
    inside_a_file = a_file / "transcripts"  # its parent is a file: mkdir fails
    result = runner.invoke(app, ["chat", "--transcripts", str(inside_a_file)], input="/list\n")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert "cannot create" in _said(result.stderr)


def test_a_usable_folder_is_created_and_the_repl_runs(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "transcripts"
    result = runner.invoke(app, ["chat", "--transcripts", str(folder)], input="/new 日本語\n/list\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "Started session" in result.stdout and "(日本語)" in result.stdout and "Bye." in result.stdout
    assert folder.is_dir()


@pytest.mark.parametrize("with_db", [False, True], ids=["transcripts", "database"])
def test_compact_says_where_the_full_history_stays(with_db: bool, tmp_path: Path) -> None:
    """With --db the REPL said the history "stays in the file" though there is no file."""
    args = ["chat", "--db", f"sqlite:///{tmp_path / 'omoide.db'}"] if with_db else ["chat"]
    result = runner.invoke(app, args, input="一つ目\n二つ目\n三つ目\n四つ目\n/compact\n")
    assert result.exit_code == 0, result.output
    where = "in the database" if with_db else "in the session's JSONL file"
    assert f"Compacted 4 turns into a summary. The full history stays {where}." in result.stdout


@pytest.mark.parametrize("with_db", [False, True], ids=["transcripts", "database"])
def test_an_unknown_session_is_an_error_not_a_chat_in_another_session(with_db: bool, tmp_path: Path) -> None:
    """``omoide chat --session nope`` printed "no session matches" and then resumed the latest
    session, where the next line was stored: a conversation in a session the user did not ask for."""
    base = ["chat", "--db", f"sqlite:///{tmp_path / 'omoide.db'}"] if with_db else ["chat"]
    first = runner.invoke(app, base, input="/new alpha\n最初のメッセージ\n/exit\n")
    assert first.exit_code == 0, first.output
    result = runner.invoke(app, [*base, "--session", "nope"], input="間違ったセッションへ\n/exit\n")
    assert result.exit_code == 1, result.output
    assert "no session" in result.stderr and "'nope'" in result.stderr and "alpha" in result.stderr
    shown = runner.invoke(app, [*base, "--session", "alpha"], input="/context\n/exit\n")
    assert shown.exit_code == 0 and "Switched to session" in shown.stdout, shown.output
    if with_db:
        db = ["--db", f"sqlite:///{tmp_path / 'omoide.db'}"]
        keys = [s["key"] for s in json.loads(runner.invoke(app, ["sessions", "list", "--json", *db]).stdout)]
        stored = "".join(runner.invoke(app, ["sessions", "export", key, *db]).stdout for key in keys)
    else:
        stored = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "data").rglob("*.jsonl"))
    assert "最初のメッセージ" in stored and "間違ったセッションへ" not in stored


def test_an_error_during_a_turn_starts_on_its_own_line(tmp_path: Path) -> None:
    """The error followed "Assistant > " on the same line (``Assistant > Error: message is …``)."""
    args = ["chat", "--db", f"sqlite:///{tmp_path / 'omoide.db'}"]
    result = runner.invoke(app, args, input="a" * 70_000 + "\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "the limit is 65,536" in _said(result.stderr)
    assert "Assistant > \nYou > " in result.stdout  # the prompt line is ended before the error
