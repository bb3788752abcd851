"""``omoide serve`` (the HTTP API) and ``omoide keys create|list|revoke`` (its API keys)."""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omoide.cli._common import (
    MAX_INT,
    DbOption,
    JsonOption,
    console,
    err_console,
    fail,
    needs_extra,
    open_memory,
    print_json,
    run,
)
from omoide.errors import OmoideError

if TYPE_CHECKING:
    import uvicorn

keys_app = typer.Typer(
    help="API keys of the HTTP API and MCP server (one workspace each).",
    epilog="Example: omoide keys create --workspace 1290478288896131072 --name discord-bot",
    no_args_is_help=True,
)


@keys_app.command("create", epilog="Example: omoide keys create --workspace 1290478288896131072 --name discord-bot")
def create(
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="The only workspace the key can reach.")],
    name: Annotated[str | None, typer.Option("--name", "-n", help="A label for people.")] = None,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Create an API key and print its token — shown this once (only its SHA-256 is stored)."""

    async def main() -> None:
        async with open_memory(db) as mem:
            created = await mem.api_keys.create(workspace, name=name)
        if json_:
            print_json(created.as_dict())
        else:
            console.print(
                f"Created API key {created.record.id} for workspace {created.record.workspace_id!r}.", markup=False
            )
            console.print("Token (shown once; store it now):", style="bold")
            print(created.token)

    run(main, json_errors=json_)


@keys_app.command("list", epilog="Example: omoide keys list --workspace 1290478288896131072 --json")
def list_keys(
    workspace: Annotated[str | None, typer.Option("--workspace", "-w", help="Only this workspace's keys.")] = None,
    active: Annotated[bool, typer.Option("--active", help="Leave out revoked keys.")] = False,
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """List API keys, newest first (never their tokens)."""

    async def main() -> None:
        async with open_memory(db) as mem:
            found = await mem.api_keys.list(workspace=workspace, include_revoked=not active, limit=1000)
        if json_:
            print_json([k.as_dict() for k in found])
            return
        table = Table("id", "workspace", "name", "prefix", "created (UTC)", "revoked (UTC)")
        for k in found:
            revoked = "" if k.revoked_at is None else k.revoked_at.strftime("%Y-%m-%d %H:%M")
            table.add_row(
                str(k.id),
                escape(k.workspace_id),
                escape(k.name),
                k.prefix + "…",
                k.created_at.strftime("%Y-%m-%d %H:%M"),
                revoked,
            )
        console.print(table)

    run(main, json_errors=json_)


@keys_app.command("revoke", epilog="Example: omoide keys revoke 3")
def revoke(
    key_id: Annotated[int, typer.Argument(min=1, max=MAX_INT, help="The key's id (see `omoide keys list`).")],
    db: DbOption = None,
    json_: JsonOption = False,
) -> None:
    """Revoke an API key at once (requests with it answer 401)."""

    async def main() -> None:
        async with open_memory(db) as mem:
            record = await mem.api_keys.revoke(key_id)
        if json_:
            print_json(record.as_dict())
        else:
            console.print(
                f"Revoked API key {record.id} ({record.prefix}…, workspace {record.workspace_id!r}).", markup=False
            )

    run(main, json_errors=json_)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    db: DbOption = None,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="Do not run the background workers in this process.")
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "warning",
    access_log: Annotated[bool, typer.Option("--access-log/--no-access-log", help="Log every request.")] = False,
    processes: Annotated[
        int,
        typer.Option(
            "--processes",
            min=1,
            max=256,
            help="HTTP processes sharing the port (uvicorn's workers). Above 1 the background workers run in "
            "one more process of their own (none with --no-workers).",
        ),
    ] = 1,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs and /openapi.json); the workers run in-process unless --no-workers.

    With --processes N, N processes answer on one port (a crashed one is restarted) and the
    background workers run in a separate process, so a request never waits behind an
    embedding batch; the database is migrated once, before they start.

    Needs the server extra: pip install 'omoide\\[server]'.
    """
    try:
        with needs_extra("server", "omoide serve"):
            import uvicorn

            from omoide.server import create_app
        from omoide.settings import load_settings
        from omoide.stores import check_backend

        settings = load_settings(**({"database_url": db} if db else {}))
        check_backend(settings.database_url)
    except OmoideError as exc:
        raise fail(exc) from None
    loop = "uvloop" if _has("uvloop") else "asyncio"
    http = "httptools" if _has("httptools") else "h11"
    if processes > 1:
        _serve_processes(
            uvicorn.Config(
                "omoide.server.factory:process_app",
                factory=True,
                workers=processes,
                host=host,
                port=port,
                log_level=log_level,
                access_log=access_log,
                loop=loop,
                http=http,
            ),
            db=db,
            background=not no_workers,
        )
        return
    app = create_app(settings, workers=not no_workers, freeze_heap=True)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=access_log, loop=loop, http=http)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # listening: say where (the real port when --port 0)
                bound = self.servers[0].sockets[0].getsockname()[1] if self.servers else port
                base = f"http://{f'[{host}]' if ':' in host else host}:{bound}"
                err_console.print(
                    f"omoide HTTP API on {base} (docs: {base}/docs); inspector: {base}/ui. Ctrl-C stops it.",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how it stops: exit 0, as uvicorn.run does
        Server(config).run()


def _serve_processes(config: uvicorn.Config, *, db: str | None, background: bool) -> None:
    """Bind once, migrate once, then run ``config.workers`` HTTP processes (uvicorn's supervisor) and,
    when ``background``, one ``python -m omoide.workers`` process beside them."""
    import asyncio
    import os
    import subprocess
    import sys

    from uvicorn.supervisors import Multiprocess

    from omoide.settings import load_settings
    from omoide.stores import open_store

    if db:  # the processes read their settings from the environment
        os.environ["OMOIDE_DATABASE_URL"] = db

    async def migrate() -> None:
        async with open_store(settings=load_settings()):
            pass

    try:
        asyncio.run(migrate())
    except OmoideError as exc:
        raise fail(exc) from None
    sock = config.bind_socket()
    bound = sock.getsockname()[1]
    host = config.host
    base = f"http://{f'[{host}]' if ':' in host else host}:{bound}"
    worker = subprocess.Popen([sys.executable, "-m", "omoide.workers"]) if background else None
    err_console.print(
        f"omoide HTTP API on {base} (docs: {base}/docs), {config.workers} processes"
        + (f", background workers in process {worker.pid}" if worker else "")
        + f"; inspector: {base}/ui. Ctrl-C stops it.",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
        if worker is not None:
            if worker.poll() is None:
                worker.terminate()  # SIGTERM: finish in-flight work, then exit
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``keys`` to the root app."""
    app.command(
        "serve",
        epilog="Example: OMOIDE_ADMIN_KEY=$(openssl rand -hex 32) omoide serve --port 8000 --db sqlite:///./data/omoide.db"
        "   (several processes: omoide serve --processes 4 --db postgresql://…)",
    )(serve)
    app.add_typer(keys_app, name="keys")


__all__ = ["register"]
