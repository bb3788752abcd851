"""``python -m omoide.workers``: the background workers without the CLI (same as ``omoide worker``)."""

from __future__ import annotations

import sys

from omoide.errors import OmoideError
from omoide.workers.service import main

if __name__ == "__main__":
    try:
        main()
    except OmoideError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        sys.exit(1)
