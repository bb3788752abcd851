"""Numbers a user types: ids, limits, pages and durations beyond what a database or a clock holds.

``omoide memory get 99999999999999999999 …``, ``omoide sources --limit 1e20``-style values and
``omoide search … --since 999999d`` printed a Python traceback (``OverflowError: Python int too
large to convert to SQLite INTEGER``, ``date value out of range``); ``omoide sessions expire
--idle-hours -1`` expired the session that had just been written to. Each now stops with a
usage error naming the option (exit 2) before anything is opened or changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from omoide.cli import app
from omoide.cli._common import MAX_INT

runner = CliRunner()
TOO_BIG = str(2**63)  # one past SQLite's INTEGER and PostgreSQL's bigint


@pytest.fixture(autouse=True)
def _hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'omoide.db'}"
    result = runner.invoke(app, ["sessions", "append", "discord:g1:c=c1:u=u1", "--text", "こんにちは", "--db", url])
    assert result.exit_code == 0, result.output
    return url


def _walk(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found.extend(_walk(sub, (*path, name)))
    return found


def test_every_integer_parameter_has_an_upper_bound_a_database_can_hold() -> None:
    """Walks the command tree, so an integer option added later is held to this too."""
    unbounded = []
    for path, command in _walk(typer.main.get_command(app), ()):
        for param in getattr(command, "params", []):
            integer = param.type_descriptor.annotation in (int, int | None)
            if integer and (param.max is None or param.max > MAX_INT):
                unbounded.append(f"omoide {' '.join(path)} {param.name}")
    assert not unbounded, unbounded


BIG_ID_COMMANDS = [
    ["memory", "get", TOO_BIG, "--workspace", "g1", "--user", "u1"],
    ["memory", "update", TOO_BIG, "新しい内容", "--workspace", "g1", "--user", "u1"],
    ["memory", "delete", TOO_BIG, "--workspace", "g1", "--user", "u1"],
    ["keys", "revoke", TOO_BIG],
    ["sources", "--limit", TOO_BIG],
    ["sources", "--offset", TOO_BIG],
    ["sessions", "list", "--limit", TOO_BIG],
    ["sessions", "list", "--offset", TOO_BIG],
    ["sessions", "show", "discord:g1:c=c1:u=u1", "--window", TOO_BIG],
    ["context", "discord:g1:c=c1:u=u1", "--budget", TOO_BIG],
]


@pytest.mark.parametrize("command", BIG_ID_COMMANDS, ids=lambda c: " ".join(c[:3]))
def test_a_number_too_big_for_the_database_is_a_usage_error(command: list[str], db: str) -> None:
    result = runner.invoke(app, [*command, "--db", db])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no OverflowError
    assert "less than or equal to" in result.output


def test_the_largest_id_a_database_holds_is_a_clean_not_found(db: str) -> None:
    for command in (
        ["memory", "get", str(MAX_INT), "--workspace", "g1", "--user", "u1"],
        ["keys", "revoke", str(MAX_INT)],
    ):
        result = runner.invoke(app, [*command, "--db", db, "--json"])
        assert result.exit_code == 1, result.output
        assert json.loads(result.stdout)["error"]["code"] == "NOT_FOUND"
    result = runner.invoke(app, ["sessions", "list", "--offset", str(MAX_INT), "--limit", str(MAX_INT), "--db", db])
    assert result.exit_code == 0, result.output


BAD_DURATIONS = ["inf", "1e400", "999999d", "99999999999d", "-5", "nan"]


@pytest.mark.parametrize("value", BAD_DURATIONS)
@pytest.mark.parametrize(
    "command",
    [
        ["search", "天気", "--guild", "g1", "--since"],
        ["ask", "天気は？", "--guild", "g1", "--until"],
        ["summarise", "--imported", "--since"],
        ["archive", "--older-than"],
    ],
    ids=lambda c: " ".join((c[0], c[-1])),
)
def test_a_duration_that_is_negative_or_beyond_the_calendar_is_a_usage_error(
    command: list[str], value: str, db: str
) -> None:
    result = runner.invoke(app, [*command, value, "--db", db])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no OverflowError / ValueError
    assert command[-1] in result.output


def test_a_long_but_real_duration_still_works(db: str) -> None:
    for command in (
        ["search", "天気", "--guild", "g1", "--since", "36500d"],
        ["archive", "--older-than", "52w", "--json"],
        ["summarise", "--imported", "--since", "3650d"],
    ):
        result = runner.invoke(app, [*command, "--db", db])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("value", ["-1", "-0.5", "inf", "nan", "1e300"])
def test_sessions_expire_refuses_an_idle_time_that_is_negative_or_not_finite(value: str, db: str) -> None:
    result = runner.invoke(app, ["sessions", "expire", "--idle-hours", value, "--db", db])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "--idle-hours" in result.output
    # the session written a moment ago was not expired
    shown = runner.invoke(app, ["sessions", "show", "discord:g1:c=c1:u=u1", "--json", "--db", db])
    assert json.loads(shown.stdout)["session"]["status"] == "active"


def test_sessions_expire_with_a_real_idle_time(db: str) -> None:
    result = runner.invoke(app, ["sessions", "expire", "--idle-hours", "24", "--db", db])
    assert result.exit_code == 0 and "Expired 0 session(s)." in result.stdout, result.output
    result = runner.invoke(app, ["sessions", "expire", "--idle-hours", "0", "--db", db])
    assert result.exit_code == 0 and "Expired 1 session(s)." in result.stdout, result.output
