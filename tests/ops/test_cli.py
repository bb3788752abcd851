"""``omoide backup`` / ``omoide restore`` from the command line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide.cli import app

from .conftest import dump, filled, url_for


@pytest.mark.parametrize("command", ["backup", "restore", "export"])
def test_help_has_an_example(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0 and "Example" in result.output


@pytest.mark.parametrize("target", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_backup_then_restore_into_a_new_database(target: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'bot.db'}"
    asyncio.run(filled(src, tmp_path))
    runner = CliRunner()
    made = runner.invoke(app, ["backup", str(tmp_path / "nightly"), "--db", src, "--json"])
    assert made.exit_code == 0, made.output
    report = json.loads(made.stdout)
    assert report["kind"] == "logical" and report["rows"]["memories"] == 4

    dst = url_for(target, request, tmp_path, "moved")
    restored = runner.invoke(app, ["restore", str(tmp_path / "nightly"), "--db", dst])
    assert restored.exit_code == 0, restored.output
    assert "Restored the sqlite backup" in restored.stdout
    assert len(asyncio.run(dump(dst))["memories"]) == 4

    again = runner.invoke(app, ["restore", str(tmp_path / "nightly"), "--db", dst, "--json"])
    assert again.exit_code == 1
    assert json.loads(again.stdout)["error"]["code"] == "CONFLICT"


def test_sqlite_file_backup_by_suffix_and_refusals(tmp_path: Path) -> None:
    src = f"sqlite:///{tmp_path / 'bot.db'}"
    asyncio.run(filled(src, tmp_path))
    runner = CliRunner()
    made = runner.invoke(app, ["backup", str(tmp_path / "copy.sqlite3"), "--db", src])
    assert made.exit_code == 0, made.output
    assert "SQLite copy" in made.stdout and (tmp_path / "copy.sqlite3").is_file()
    exists = runner.invoke(app, ["backup", str(tmp_path / "copy.sqlite3"), "--db", src])
    assert exists.exit_code == 1 and "already exists" in exists.output
    nothing = runner.invoke(app, ["restore", str(tmp_path / "none"), "--db", f"sqlite:///{tmp_path / 'x.db'}"])
    assert nothing.exit_code == 1 and "no backup" in nothing.output
    pg_file = runner.invoke(app, ["backup", str(tmp_path / "pg"), "--file", "--db", "postgresql://u@localhost/db"])
    assert pg_file.exit_code == 1 and "only an SQLite database" in pg_file.output


@pytest.mark.parametrize("target", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_export_a_folder_then_restore_moves_the_database(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``omoide export DIR`` is the whole database, restorable (the issue's move:
    ``omoide export`` → ``omoide restore --db postgresql://…``); mixing it with the JSONL
    options, or giving neither, says what to give."""
    src = f"sqlite:///{tmp_path / 'bot.db'}"
    asyncio.run(filled(src, tmp_path))
    runner = CliRunner()
    made = runner.invoke(app, ["export", str(tmp_path / "move"), "--db", src])
    assert made.exit_code == 0, made.output
    assert "logical backup" in made.stdout and (tmp_path / "move" / "manifest.json").is_file()
    dst = url_for(target, request, tmp_path, "moved")
    restored = runner.invoke(app, ["restore", str(tmp_path / "move"), "--db", dst])
    assert restored.exit_code == 0, restored.output
    moved = asyncio.run(dump(dst))
    assert len(moved["memories"]) == 4
    if target == "sqlite":  # the same backend: every row as it was
        assert moved == asyncio.run(dump(src))
    mixed = runner.invoke(app, ["export", str(tmp_path / "x"), "--workspace", "w1", "--db", src])
    assert mixed.exit_code == 2 and "whole database" in mixed.output
    neither = runner.invoke(app, ["export", "--db", src])
    assert neither.exit_code == 2 and "--workspace" in neither.output
