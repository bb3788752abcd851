"""``omoide mcp``: serve omoide's memory to MCP clients (Claude Desktop, Claude Code, agents)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from omoide.cli._common import DbOption, err_console, needs_extra, run
from omoide.errors import ConfigError
from omoide.runtime import freeze_startup_heap

if TYPE_CHECKING:
    from omoide.engine import Memory
    from omoide.mcp import Authenticator

EPILOG = (
    "Example: omoide mcp --workspace 1290478288896131072 --user 42 --db sqlite:///./data/omoide.db   "
    "(stdio, for Claude Desktop / Claude Code);  omoide mcp --http --port 8765   "
    "(streamable HTTP at http://127.0.0.1:8765/mcp, Authorization: Bearer <API key>, X-Omoide-User: <user>)"
)


def api_key_authenticator(mem: Memory) -> Authenticator:
    """Bearer token → the workspace of the active API key it is (``Memory.api_keys``), else ``None``."""
    keys = mem.api_keys

    async def authenticate(token: str) -> str | None:
        record = await keys.verify(token)
        return None if record is None else record.workspace_id

    return authenticate


def mcp(
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "--guild",
            "-w",
            help="stdio: the workspace (guild / Slack team) every tool uses. Default: $OMOIDE_MCP_WORKSPACE.",
            show_default=False,
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            help="Whose memories the memory tools use (over HTTP: when a request has no X-Omoide-User header). "
            "Default: $OMOIDE_MCP_USER.",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP behind API keys instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="--http: the address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="--http: the port to listen on.")] = 8765,
    db: DbOption = None,
) -> None:
    """Serve remember, recall, list_memories, forget_memory, forget_me, search, ask and build_context as MCP tools.

    stdio: one process serves one workspace and one user.

    HTTP: every request needs an API key (Authorization: Bearer <key>), which decides the workspace.

    Needs the mcp extra: pip install 'omoide\\[mcp]'.
    """

    async def main() -> None:
        from omoide.engine import Memory

        with needs_extra("mcp", "omoide mcp"):
            from omoide.mcp import McpScope, serve_http, serve_stdio
        from omoide.settings import load_settings

        overrides: dict[str, Any] = {"database_url": db} if db else {}
        if user is not None:
            overrides["mcp_user"] = user
        if workspace is not None:
            overrides["mcp_workspace"] = workspace
        settings = load_settings(**overrides)
        if http and workspace is not None:
            raise ConfigError("--workspace is for stdio: over HTTP each API key decides its workspace")
        if not http and not (settings.mcp_workspace or "").strip():
            raise ConfigError(
                "omoide mcp over stdio serves one workspace: give --workspace ID (or set OMOIDE_MCP_WORKSPACE)"
            )
        default_user = (settings.mcp_user or "").strip() or None
        async with Memory.open(settings) as mem:
            freeze_startup_heap()  # this process is the MCP server's: see omoide.runtime
            if http:
                authenticate = api_key_authenticator(mem)
                err_console.print(
                    f"omoide MCP server on http://{host}:{port}/mcp (streamable HTTP; "
                    "Authorization: Bearer <API key>). Ctrl-C stops it.",
                    highlight=False,
                )
                await serve_http(mem, authenticate, host=host, port=port, default_user=default_user)
            else:
                assert settings.mcp_workspace is not None
                await serve_stdio(mem, McpScope(settings.mcp_workspace.strip(), default_user))

    run(main)


def register(app: typer.Typer) -> None:
    """Add ``mcp`` to the root ``omoide`` app."""
    app.command("mcp", epilog=EPILOG)(mcp)


__all__ = ["api_key_authenticator", "mcp", "register"]
