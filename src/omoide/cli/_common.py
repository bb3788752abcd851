"""Shared CLI plumbing: options, running coroutines, rendering results and errors.

Commands are thin: they parse options, call :class:`omoide.Memory`, and render. Every
:class:`~omoide.errors.OmoideError` is shown as one line (plus a hint) and exits 1; with
``--json`` the error is printed as ``{"error": {"code": ..., "message": ...}}``. A command whose
extra is not installed says which one (:func:`needs_extra`).

Text that is not ours (messages, names, URLs, hints such as ``pip install 'omoide[postgres]'``)
goes through :func:`rich.markup.escape` before rich prints it, or rich reads ``[postgres]`` as a
style and drops it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from omoide.engine import Memory
from omoide.errors import ConfigError, OmoideError
from omoide.settings import load_settings

T = TypeVar("T")

console = Console(emoji=False)  # ids and stored text as they are: "discord:100:…" is no 💯
err_console = Console(stderr=True, emoji=False)

MAX_INT = 2**63 - 1
"""The largest integer SQLite (INTEGER) and PostgreSQL (bigint) hold: the ``max`` of every integer
option and argument (an id, limit, offset or budget), so a larger one is a usage error, not an
``OverflowError`` from the driver."""

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL (sqlite:///PATH or postgresql://…). Default: $OMOIDE_DATABASE_URL or sqlite:///./data/omoide.db.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@asynccontextmanager
async def open_memory(db: str | None) -> AsyncIterator[Memory]:
    from omoide.cli._db import refuse_foreign_database  # (_db imports this module)

    refuse_foreign_database(db)
    overrides: dict[str, Any] = {"database_url": db} if db else {}
    async with Memory.open(load_settings(**overrides)) as mem:
        yield mem


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Turn a missing third-party module imported in the block into a :class:`ConfigError` that
    names the extra to install (a missing module of omoide itself is a bug and stays one).

    Example:
        >>> with needs_extra("server", "omoide serve"):  # doctest: +SKIP
        ...     import uvicorn
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.partition(".")[0] == "omoide":
            raise
        raise ConfigError(
            f"{what} needs the {extra} extra ({exc.name} is not installed): pip install 'omoide[{extra}]'"
        ) from None


def print_error(message: str) -> None:
    """``Error: MESSAGE`` on stderr, the message printed as it is (no rich markup in it)."""
    err_console.print(f"[bold red]Error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def fail(exc: OmoideError, *, json_errors: bool = False) -> typer.Exit:
    """Print ``exc`` (as JSON with ``json_errors``) and return the ``Exit(1)`` to raise."""
    if json_errors:
        print(json.dumps({"error": {"code": exc.code, "message": exc.message}}, ensure_ascii=False))
    else:
        print_error(exc.message)
    return typer.Exit(1)


def run(main: Callable[[], Awaitable[T]], *, json_errors: bool = False) -> T:
    """Run an async command body; turn omoide errors into a clean message and exit code 1."""
    try:
        return asyncio.run(_call(main))
    except OmoideError as exc:
        raise fail(exc, json_errors=json_errors) from None
    except KeyboardInterrupt:
        err_console.print("[yellow]Interrupted.[/]")
        raise typer.Exit(130) from None


async def _call(main: Callable[[], Awaitable[T]]) -> T:
    return await main()


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums and datetimes → plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return value.to_dict()
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")


class RateColumn(ProgressColumn):
    """Items per second (``1,234 msg/s``), from rich's recent samples; the unit is the task's ``unit`` field."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        unit = str(task.fields.get("unit", "items"))
        if speed is None:
            return Text(f"– {unit}/s", style="progress.data.speed")
        shown = f"{speed:,.0f}" if speed >= 100 else f"{speed:,.1f}"
        return Text(f"{shown} {unit}/s", style="progress.data.speed")


def progress_bars(enabled: bool = True) -> Progress:
    """The progress display of long jobs, advancing per item: count, rate (the task's ``unit``
    field), time elapsed and time left (on stderr, gone when done; ``enabled=False`` for ``--json``)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("•"),
        TimeRemainingColumn(),
        TextColumn("left"),
        console=err_console,
        transient=True,
        disable=not enabled,
    )


__all__ = [
    "MAX_INT",
    "DbOption",
    "JsonOption",
    "RateColumn",
    "console",
    "err_console",
    "fail",
    "needs_extra",
    "open_memory",
    "print_error",
    "print_json",
    "progress_bars",
    "run",
    "to_jsonable",
]
