"""``omoide status``: long-term memory at a glance, what waits for vectors and the running job.

Added to the root app by :func:`register`.
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from omoide.cli._common import DbOption, JsonOption, console, print_json, run
from omoide.cli._db import open_existing_memory
from omoide.providers.local.line_reader import model_path
from omoide.text.tokenize import japanese_tokenizer
from omoide.workers.progress import JobProgress, read_progress


def status(db: DbOption = None, json_: JsonOption = False) -> None:
    """Show long-term memory at a glance: sessions, unarchived messages, sources, vectors per model,
    what still waits for vectors and the running embedding job's progress (rate, time left), the
    search tokenizer, and the chunks still missing their retrieval units (`omoide reindex --units`)."""

    async def main() -> dict[str, Any]:
        async with open_existing_memory(db) as mem:
            counts = await mem.knowledge.status()
            model = mem.embedder.model_id
            indexed = await mem.store.search.lexical_tokenizer()
            job = await read_progress(mem.store)
        japanese = japanese_tokenizer()  # the same answer as `omoide providers`
        return {
            "sessions": dict(counts.sessions),
            "unarchived_messages": counts.unarchived_messages,
            "sources": dict(counts.sources),
            "chunks": counts.chunks,
            "embedded": dict(counts.embedded),
            "embedder": model,
            "chunks_to_embed": max(0, counts.chunks - counts.embedded.get(model, 0)),
            "units_missing": counts.units_missing,
            "unit_vectors_missing": dict(counts.unit_vectors_missing),
            "reader_vectors_missing": dict(counts.reader_vectors_missing),
            "line_reader": mem.settings.line_reader != "off" and model_path() is not None,  # popped below
            "search_tokenizer": japanese.name,
            "search_tokenizer_detail": japanese.detail,
            "lexical_index_tokenizer": indexed,
            "embedding_job": None if job is None else job.as_dict(),
        }

    data = run(main, json_errors=json_)
    reader_on = data.pop("line_reader")  # whether `reindex --units` can add reader vectors here
    if json_:
        print_json(data)
        return
    table = Table("", "count", show_header=False)
    for name, count in data["sessions"].items():
        table.add_row(f"sessions {name}", str(count))
    table.add_row("unarchived messages", str(data["unarchived_messages"]))
    for name, count in data["sources"].items():
        table.add_row(f"sources {name}", str(count))
    table.add_row("chunks", str(data["chunks"]))
    for name, count in sorted(data["embedded"].items()):
        marker = " (in use)" if name == data["embedder"] else ""
        table.add_row(f"embedded with {name}{marker}", str(count))
    table.add_row(f"chunks to embed with {data['embedder']}", str(data["chunks_to_embed"]))
    table.add_row("chunks without units", str(data["units_missing"]))
    missing = data["unit_vectors_missing"]
    for name in sorted({*missing, data["embedder"]}):
        marker = " (in use)" if name == data["embedder"] else ""
        table.add_row(f"vectors without units, {name}{marker}", str(missing.get(name, 0)))
    reader_missing = data["reader_vectors_missing"]
    for name in sorted({*reader_missing, data["embedder"]}):
        marker = " (in use)" if name == data["embedder"] else ""
        table.add_row(f"vectors without line reader, {name}{marker}", str(reader_missing.get(name, 0)))
    tokenizer = data["search_tokenizer"]
    if not tokenizer.startswith("sudachi"):
        tokenizer += f" ({data['search_tokenizer_detail']})"
    if data["lexical_index_tokenizer"] not in (None, tokenizer):
        tokenizer += f" (index written by {data['lexical_index_tokenizer']}: run `omoide reindex --lexical`)"
    table.add_row("search tokenizer (Japanese)", tokenizer)
    console.print(table)
    _print_waiting(data)
    if data["units_missing"] or missing.get(data["embedder"], 0):
        console.print(
            "Older chunks have no retrieval units yet: search ranks them as whole chunks, not message by "
            "message. Run `omoide reindex --units` to build them.",
            highlight=False,
        )
    elif reader_on and reader_missing.get(data["embedder"], 0):
        console.print(
            "Some messages have not been read by the line reader yet: search scores them without its vectors. "
            "Run `omoide reindex --units` to add them.",
            highlight=False,
        )


def _print_waiting(data: dict[str, Any]) -> None:
    """The embedding job's progress, or what waits for vectors and how to start it."""
    job = data["embedding_job"]
    if job is not None:
        console.print(JobProgress(**job).describe().capitalize() + ".", highlight=False, markup=False)
    waiting = data["chunks_to_embed"]
    if waiting and (job is None or not job["running"]):
        console.print(
            f"{waiting} chunk(s) are searchable by words but wait for vectors: run `omoide worker` "
            "(or `omoide embed`) to add them.",
            highlight=False,
            markup=False,
        )


# ------------------------------------------------------------------------- sources


def register(app: typer.Typer) -> None:
    """Add ``omoide status`` to the root ``omoide`` app."""
    app.command("status", epilog="Example: omoide status --json")(status)


__all__ = ["register", "status"]
