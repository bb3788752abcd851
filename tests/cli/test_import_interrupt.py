"""Ctrl-C during ``omoide import``: it says what was kept and what to run next.

It printed only "Interrupted." (exit 130), though the messages imported so far are stored, the
same import run again adds only the rest, and ``omoide embed`` finishes the vectors. The real
entry point in a subprocess; SIGINT once the first chunks are in the database, while the
default (local, slow) embedder is at work.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import omoide
from importers.dce import ALICE, BOB, document, message, t, write


def _chunks(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            return int(conn.execute("SELECT count(*) FROM knowledge_chunks").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:  # not migrated yet, or busy
        return 0


def test_ctrl_c_during_an_import_says_what_is_kept_and_what_to_run(tmp_path: Path) -> None:
    lines = ["週末は山に登る予定です。天気が心配ですね", "I went camping with the kids last summer.", "了解です"]
    messages = [
        message(t(3, 9) + timedelta(minutes=i), f"{lines[i % 3]} #{i}", ALICE if i % 2 else BOB, increment=i)
        for i in range(3000)
    ]
    export = write(tmp_path / "general.json", document(messages))
    database = tmp_path / "omoide.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env["PYTHONPATH"] = str(Path(omoide.__file__).resolve().parents[1])  # this tree's omoide
    command = ["import", str(export), "--db", f"sqlite:///{database}"]
    child = subprocess.Popen(
        [sys.executable, "-c", "from omoide.cli import main; main()", *command],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while _chunks(database) == 0 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert child.poll() is None, "the import finished before it could be interrupted"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, out + err
    said = " ".join(err.split())
    assert "Interrupted" in said
    assert "kept" in said and "omoide import" in said and "omoide embed" in said, said
    assert "Traceback" not in err
    assert _chunks(database) > 0  # what was imported is still there
