"""Browser plumbing for the inspector tests: find (or, on CI, install) Debian's Chromium, and
serve the app with uvicorn on 127.0.0.1 in a thread.

Playwright drives the system Chromium (its own browser download cannot work here). When no
Chromium is found, CI (``CI`` set) as root with apt-get installs the ``chromium`` package;
otherwise the browser tests skip, saying why, and the rest of the run goes on. (The Japanese
font is only for readable screenshots; the tests read text, not pixels.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def find_chromium() -> str | None:
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_reason() -> tuple[str | None, str]:
    """The Chromium executable, installing it on CI when possible; else ``(None, why)``."""
    found = find_chromium()
    if found:
        return found, ""
    apt = shutil.which("apt-get")
    if not os.environ.get("CI"):
        return None, "no Chromium found (apt-get install chromium); set CI=1 as root to install it automatically"
    if os.geteuid() != 0 or apt is None:
        return None, "no Chromium found and cannot install it here (needs root and apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        [apt, "update"],
        [apt, "install", "-y", "--no-install-recommends", "chromium", "fonts-ipafont-gothic"],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            return None, f"installing Chromium failed ({' '.join(command[1:])}): {done.stderr.strip()[-300:]}"
    found = find_chromium()
    return (found, "") if found else (None, "apt-get installed chromium but no executable was found")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 in a thread while the block runs; yield its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="omoide-ui-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
