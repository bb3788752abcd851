"""English search tokenising with PyStemmer (C Snowball) vs snowballstemmer's pure Python.

    python benchmarks/stemmer.py            # 2 rounds, alternating, a fresh process each

``snowballstemmer`` uses PyStemmer when it can import it; the pure-Python run hides it
(``sys.modules["Stemmer"] = None``). Each process tokenises LoCoMo's dev turns once with
``tokenize_for_search`` (cold caches, as an import does) and prints texts per second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def child(mode: str) -> None:
    if mode == "pure":
        sys.modules["Stemmer"] = None  # type: ignore[assignment]
    from omoide.text import tokenize_for_search

    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    texts = [
        t["text"]
        for conv in data
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    tokenize_for_search("warm up")
    started = time.perf_counter()
    for text in texts:
        tokenize_for_search(text)
    seconds = time.perf_counter() - started
    print(
        f"  {'pure Python' if mode == 'pure' else 'PyStemmer':12} {len(texts):,} texts  {len(texts) / seconds:9,.0f} texts/s"
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "_child":
        child(sys.argv[2])
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(f"machine: {machine()}")
    print(f"load average before: {os.getloadavg()}")
    for _ in range(rounds):
        for mode in ("pure", "c"):
            subprocess.run([sys.executable, __file__, "_child", mode], check=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
