"""``omoide mcp``'s options: what it refuses before serving anything."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()


def test_help_has_an_example() -> None:
    shown = runner.invoke(app, ["mcp", "--help"])
    assert shown.exit_code == 0
    assert "Example: omoide mcp --workspace" in shown.output and "--http" in shown.output


def test_help_names_every_tool_the_server_serves() -> None:
    from mcp_support import TOOLS

    shown = runner.invoke(app, ["mcp", "--help"], env={"COLUMNS": "300"})
    assert shown.exit_code == 0
    assert {tool for tool in TOOLS if not re.search(rf"\b{tool}\b", shown.output)} == set()  # forget_me ≠ forget_memory


def test_stdio_needs_a_workspace() -> None:
    refused = runner.invoke(app, ["mcp", "--user", "42"])
    assert refused.exit_code == 1
    assert "--workspace" in refused.output and "OMOIDE_MCP_WORKSPACE" in refused.output


def test_http_takes_the_workspace_from_the_key() -> None:
    refused = runner.invoke(app, ["mcp", "--http", "--workspace", "123"])
    assert refused.exit_code == 1
    assert "each API key decides its workspace" in refused.output
