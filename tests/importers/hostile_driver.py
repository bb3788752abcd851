"""Import the hostile corpus in this process and print, as JSON, what each import did and its peak memory.

Run by ``test_hostile_imports.py`` and ``benchmarks/hostile_imports.py`` in a subprocess::

    python tests/importers/hostile_driver.py --db sqlite:///x.db --via cli  --corpus DIR
    python tests/importers/hostile_driver.py --db postgresql://… --via http --corpus DIR

``--via cli`` runs ``omoide import FILE --db … --workspace … --no-embed --json`` (the real
Typer app, in process); ``--via http`` posts each file as a multipart upload
(``curl -F file=@…``) to ``POST /v1/imports`` of the real FastAPI app with a real API key.
The good export is imported first; after every hostile file the good data is read back.

Peak memory per file: Linux resets a process's peak RSS (``VmHWM``) when ``5`` is written
to ``/proc/self/clear_refs``; it is reset before each import and read after it. Where
that is refused, ``per_file`` is false and each figure is the process's peak so far.
Settings come from the environment (``OMOIDE_*``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from hostile import CORPUS, FILES, GOOD_PHRASE, GUILD  # type: ignore[import-not-found]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class Meter:
    def __init__(self) -> None:
        self.per_file = True

    def start(self) -> tuple[int, float]:
        self.per_file = _reset_peak() and self.per_file
        return _status_kb("VmRSS"), time.perf_counter()

    def stop(self, started: tuple[int, float]) -> dict[str, Any]:
        return {
            "rss_before_mb": round(started[0] / 1024, 1),
            "peak_mb": round(_status_kb("VmHWM") / 1024, 1),
            "seconds": round(time.perf_counter() - started[1], 2),
        }


def _cli(db: str, path: Path) -> dict[str, Any]:
    from typer.testing import CliRunner

    from omoide.cli import app

    result = CliRunner().invoke(app, ["import", str(path), "--db", db, "--workspace", GUILD, "--no-embed", "--json"])
    try:
        body = json.loads(result.stdout)
    except ValueError:
        body = {"raw": result.output[-2000:]}
    return {"exit_code": result.exit_code, "body": body, "stderr": result.stderr[-2000:]}


_MAX_TOKENS: dict[tuple[Any, int], int] = {}


async def _state(mem: Any) -> dict[str, Any]:
    """What is stored: per source its title, chunk count and largest chunk (cl100k tokens); the good phrase found?"""
    from omoide.providers.tokens import get_token_counter

    counter = get_token_counter()
    kstore = mem.store.knowledge
    sources = []
    for source in await mem.knowledge.sources(workspace=GUILD, limit=1000):
        chunks = await kstore.chunks_of_source(source.id)
        contents = hash(tuple(c.content for c in chunks))
        if (source.id, contents) not in _MAX_TOKENS:  # counting is the slow part: once per source
            _MAX_TOKENS[source.id, contents] = max((counter.count(c.content) for c in chunks), default=0)
        sources.append(
            {
                "title": source.title,
                "chunks": len(chunks),
                "max_tokens": _MAX_TOKENS[source.id, contents],
                "contents_hash": contents,
            }
        )
    hits = await mem.search(GOOD_PHRASE, workspace=GUILD, mode="lexical", k=3)
    return {
        "sources": sorted(sources, key=lambda s: s["title"]),
        "good_found": any(GOOD_PHRASE in h.content for h in hits.hits),
    }


async def _run_cli(db: str, files: list[tuple[str, Path]], meter: Meter) -> list[dict[str, Any]]:
    from omoide import Memory
    from omoide.settings import Settings

    out = []
    for name, path in files:
        started = meter.start()
        result = await asyncio.to_thread(_cli, db, path)
        result.update(meter.stop(started), name=name)
        async with Memory.open(Settings(database_url=db, embedder="hashing")) as mem:
            result["state"] = await _state(mem)
        out.append(result)
    return out


async def _run_http(db: str, files: list[tuple[str, Path]], meter: Meter) -> list[dict[str, Any]]:
    import httpx

    from omoide import Memory
    from omoide.server import create_app
    from omoide.settings import Settings

    out = []
    async with Memory.open(Settings(database_url=db, embedder="hashing")) as mem:
        key = await mem.api_keys.create(GUILD, name="hostile")
        app = create_app(mem, workers=False)
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {key.token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://omoide.test", timeout=600) as client:
            for name, path in files:
                started = meter.start()
                with path.open("rb") as handle:
                    response = await client.post(
                        "/v1/imports", headers=headers, files={"file": (path.name, handle, "application/octet-stream")}
                    )
                result: dict[str, Any] = {"status": response.status_code, "body": response.json(), "name": name}
                result.update(meter.stop(started))
                result["state"] = await _state(mem)
                out.append(result)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    parser.add_argument("--via", choices=("cli", "http"), required=True)
    parser.add_argument("--corpus", type=Path, required=True, help="the folder hostile.generate() wrote")
    parser.add_argument("--only", nargs="*", help="names of hostile files to import (default: all)")
    args = parser.parse_args()
    names = [n for n in CORPUS if not args.only or n in args.only]
    files = [(n, args.corpus / FILES[n]) for n in ["good", *names]]
    meter = Meter()
    run = _run_cli if args.via == "cli" else _run_http
    results = asyncio.run(run(args.db, files, meter))
    json.dump({"per_file": meter.per_file, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
