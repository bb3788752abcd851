"""Ctrl-C during ``omoide restore`` into SQLite: no crash, and the target stays empty.

A SIGINT while a batch was being inserted cancelled the await, but the insert went on in its
thread; leaving the writer then rolled back and closed the same connection from a second
thread, and the process died of a segmentation fault (``omoide restore`` exited -11). The
writer (and the reader of ``omoide backup``) now lets an operation in flight finish before it
rolls back and closes. Run in a subprocess, so that a crash fails the test instead of pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

import omoide
from omoide.cli import app

SCRIPT = r"""
import asyncio, sqlite3, sys
from pathlib import Path
from omoide.ops._sqlite import SqliteWriter
from omoide.ops.tables import table

async def main(path: str) -> None:
    wal = Path(path + "-wal")
    start = wal.stat().st_size if wal.exists() else 0
    state = table("erasure_state")
    rows = [{"workspace_id": f"w{i}", "generation": 1} for i in range(400_000)]
    async with SqliteWriter(path) as writer:
        write = asyncio.ensure_future(writer.write(state, ("workspace_id", "generation"), rows))
        while not write.done() and (wal.stat().st_size if wal.exists() else 0) <= start + 65536:
            await asyncio.sleep(0.005)  # until the rows are being inserted, in the writer's thread
        print("inserting" if not write.done() else "done too soon", flush=True)
        write.cancel()  # what Ctrl-C does: the await ends, the thread goes on
        try:
            await write
        except asyncio.CancelledError:
            pass
    conn = sqlite3.connect(path)
    print("rows", conn.execute("SELECT count(*) FROM erasure_state").fetchone()[0], flush=True)

asyncio.run(main(sys.argv[1]))
"""


def test_cancelling_a_restore_mid_batch_rolls_back_without_a_crash(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env["PYTHONPATH"] = str(Path(omoide.__file__).resolve().parents[1])  # this tree's omoide
    env["PYTHONFAULTHANDLER"] = "1"
    for attempt in range(3):
        target = tmp_path / f"target-{attempt}.db"
        assert CliRunner().invoke(app, ["migrate", "--db", f"sqlite:///{target}"]).exit_code == 0
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(target)], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]  # -11: the segmentation fault
        assert done.stdout.split() == ["inserting", "rows", "0"], done.stdout + done.stderr[-2000:]
