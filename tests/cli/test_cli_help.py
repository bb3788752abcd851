"""Every command and group of ``omoide`` has ``--help`` with an example (issue 2: "every command
has ``--help`` with an example").

The commands are not listed by hand: the test walks the command tree that typer builds from
the app (``typer.main.get_command``; every group has click's ``commands`` mapping), so a
command added later is checked without touching this file.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()
EXAMPLE = re.compile(r"\bExamples?:")  # "Example: omoide …", or "Examples: omoide … | omoide …"

# Groups or commands known to lack an example, owned by someone else: strict xfail, so the
# test starts failing (XPASS) the moment the example lands and the entry must be removed.
KNOWN_MISSING_EXAMPLE: dict[tuple[str, ...], str] = {}


def _walk(command: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    # typer >= 0.22 vendors click (typer._click): TyperGroup is no click.Group, so look for
    # the group's ``commands`` mapping instead of checking the class
    found = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found.extend(_walk(sub, (*path, name)))
    return found


ROOT = typer.main.get_command(app)
COMMANDS = _walk(ROOT, ())


def _cases() -> list[object]:
    cases: list[object] = []
    for path in COMMANDS:
        marks = []
        if path in KNOWN_MISSING_EXAMPLE:
            marks.append(pytest.mark.xfail(reason=KNOWN_MISSING_EXAMPLE[path], strict=True))
        cases.append(pytest.param(path, id=" ".join(("omoide", *path)), marks=marks))
    return cases


def test_the_walk_finds_the_whole_tree() -> None:
    assert isinstance(getattr(ROOT, "commands", None), dict)
    names = {" ".join(path) for path in COMMANDS}
    # a sample of leaves and groups at every depth; the real check is that the walk recurses
    assert {"", "migrate", "sessions", "sessions import", "memory", "memory add", "summaries show"} <= names
    assert len(COMMANDS) > 25
    assert all(path[:-1] in COMMANDS for path in COMMANDS if path)  # every parent is walked too


@pytest.mark.parametrize("path", _cases())
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    found = EXAMPLE.search(result.stdout)
    assert found, f"`omoide {' '.join(path)} --help` shows no example"
    example = " ".join(result.stdout[found.end() :].split())  # rich wraps long lines
    assert " ".join(("omoide", *path)) in example, f"the example does not run `omoide {' '.join(path)}`: {example}"


SEED = re.compile(r"\bseeds?\b", re.IGNORECASE)


@pytest.mark.parametrize("path", [pytest.param(p, id=" ".join(("omoide", *p))) for p in COMMANDS])
def test_no_help_mentions_the_seeds(path: tuple[str, ...]) -> None:
    """Users have never seen the design seeds: "seed 004" in a help text means nothing to them."""
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert not SEED.search(result.stdout), f"`omoide {' '.join(path)} --help` mentions a seed:\n{result.stdout}"


def test_ask_help_shows_the_citation_marker() -> None:
    """``[#n]`` is rich markup unless escaped: the help said "citations  from"."""
    result = runner.invoke(app, ["ask", "--help"])
    assert "[#n]" in result.stdout


def test_no_setting_description_mentions_the_seeds() -> None:
    """Setting descriptions reach users (JSON schema, generated docs): no "seed 004" in them."""
    from omoide.settings import Settings

    for name, field in Settings.model_fields.items():
        assert not SEED.search(field.description or ""), f"{name}: {field.description}"
