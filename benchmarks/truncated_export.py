"""A truncated DiscordChatExporter file (an interrupted export): peak memory of reading it.

Usage:
    python benchmarks/truncated_export.py [--messages 600000]

Writes one export of ``--messages`` messages (~150 MB at the default) cut 100 bytes before its
end, then, in a fresh process, streams it with :func:`omoide.importers.iter_discord` and prints
the messages read, the problems listed, the process's peak RSS and the time. The reader keeps
the messages before the cut; it must not decode the invalid file whole to find it invalid
(before the fix it did: 1,345 MB peak for the 150 MB file).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _machine import machine

_READ = """
import resource, sys, time
from pathlib import Path
from omoide.importers import ImportReport, iter_discord
report = ImportReport()
started = time.perf_counter()
read = sum(1 for _ in iter_discord(Path(sys.argv[1]), report=report))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(read, len(report.problems), peak, round(time.perf_counter() - started, 1))
"""


def write_truncated(path: Path, messages: int) -> None:
    header = {"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "name": "c", "type": "GuildTextChat"}}
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header)[:-1] + ', "messages": [')
        for i in range(messages):
            record = {
                "id": str(1_310_000_000_000_000_000 + i),
                "type": "Default",
                "timestamp": f"2025-03-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
                "content": "hello world " * 10,
                "author": {"id": "4200", "name": "rin"},
            }
            out.write(("," if i else "") + json.dumps(record))
        out.write("]}")
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size - 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=600_000, help="messages in the export (default 600000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "truncated.json"
        write_truncated(path, args.messages)
        size_mb = path.stat().st_size / 2**20
        out = subprocess.run([sys.executable, "-c", _READ, str(path)], check=True, capture_output=True, text=True)
        read, problems, peak, seconds = out.stdout.split()
    print(f"truncated export {size_mb:.0f} MB, {args.messages:,} messages written")
    print(f"  messages read {int(read):,}, problems {problems}, peak RSS {peak} MB, {seconds} s")
    print(f"\nmachine: {machine()}")


if __name__ == "__main__":
    main()
