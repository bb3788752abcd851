"""Shared helpers of the MCP server tests.

This folder has no ``__init__.py`` on purpose: as a package it would be importable as
``mcp`` (pytest puts ``tests/`` on ``sys.path``) and shadow the MCP SDK.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult, TextContent

import omoide
from mcp import ClientSession, StdioServerParameters, stdio_client

GUILD = "1290478288896131072"  # the sample export's guild
SAMPLE = Path(omoide.__file__).parent / "sample_data" / "discord"
OMOIDE = str(Path(sys.executable).parent / "omoide")
TOOLS = {"remember", "recall", "list_memories", "forget_memory", "forget_me", "search", "ask", "build_context"}


async def make_sample_db(path: Path) -> str:
    """A SQLite file with the sample Discord export imported and embedded (hashing embedder)."""
    url = f"sqlite:///{path}"
    async with omoide.Memory.open(database_url=url, embedder="hashing") as mem:
        await mem.knowledge.import_export([SAMPLE])
        await mem.knowledge.embed()
    return url


def server_env(**extra: str) -> dict[str, str]:
    """The spawned server's environment. ``PYTHONPATH`` names the omoide these tests imported, so
    the server runs the same code (a source tree on ``PYTHONPATH``, not the venv's install)."""
    source = str(Path(omoide.__file__).parents[1])
    path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    return {"OMOIDE_EMBEDDER": "hashing", "OMOIDE_LOG_LEVEL": "WARNING", "PYTHONPATH": path, **extra}


@asynccontextmanager
async def stdio_session(*args: str, env: dict[str, str] | None = None, cwd: Path) -> AsyncIterator[ClientSession]:
    """A real MCP client session with ``omoide mcp ARGS`` spawned over stdio."""
    params = StdioServerParameters(command=OMOIDE, args=["mcp", *args], env=env or server_env(), cwd=cwd)
    with (cwd / "mcp-server.stderr").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a successful call (fails the test with the error text otherwise)."""
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return result.structured_content
