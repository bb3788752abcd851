"""A real ``omoide serve`` (uvicorn, workers in-process) on 127.0.0.1, and the ``omoide keys`` CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

OMOIDE = [str(Path(sys.executable).with_name("omoide"))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(proc: subprocess.Popen[str], url: str, *, seconds: float) -> None:
    """Poll ``url`` until it answers 200; fail with the server's stderr if it exits first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(
        OMOIDE_DATABASE_URL=f"sqlite:///{tmp_path / 'serve.db'}",
        OMOIDE_EMBEDDER="hashing",
        OMOIDE_ADMIN_KEY="admin-" + "k" * 32,
    )
    return env


@dataclass
class _Result:
    returncode: int
    stdout: str
    stderr: str


def _cli(env: dict[str, str], *args: str) -> _Result:
    """Run ``omoide ARGS`` in this process (typer's runner) with ``env``."""
    from typer.testing import CliRunner

    from omoide.cli import app

    result = CliRunner().invoke(app, list(args), env=env)
    return _Result(result.exit_code, result.stdout, result.stderr)


def test_keys_cli(tmp_path):
    env = _env(tmp_path)
    made = _cli(env, "keys", "create", "--workspace", "g1", "--name", "bot", "--json")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert created["token"].startswith("omk_") and created["workspace_id"] == "g1"
    plain = _cli(env, "keys", "create", "--workspace", "g2")
    assert plain.returncode == 0 and "omk_" in plain.stdout
    listed = json.loads(_cli(env, "keys", "list", "--json").stdout)
    assert [k["workspace_id"] for k in listed] == ["g2", "g1"] and all("token" not in k for k in listed)
    assert "g1" in _cli(env, "keys", "list").stdout
    revoked = _cli(env, "keys", "revoke", str(created["id"]))
    assert revoked.returncode == 0 and "Revoked" in revoked.stdout
    active = json.loads(_cli(env, "keys", "list", "--active", "--json").stdout)
    assert [k["workspace_id"] for k in active] == ["g2"]
    missing = _cli(env, "keys", "revoke", "999", "--json")
    assert missing.returncode == 1 and json.loads(missing.stdout)["error"]["code"] == "NOT_FOUND"
    bad = _cli(env, "keys", "create", "--workspace", "  ")
    assert bad.returncode == 1 and "workspace" in bad.stderr
    assert "Example:" in _cli(env, "serve", "--help").stdout
    for command in ("create", "list", "revoke"):
        assert "Example:" in _cli(env, "keys", command, "--help").stdout


@pytest.mark.slow
def test_real_uvicorn_server(tmp_path):
    env = _env(tmp_path)
    token = json.loads(_cli(env, "keys", "create", "--workspace", "g1", "--json").stdout)["token"]
    port = _free_port()
    proc = subprocess.Popen(
        [*OMOIDE, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(proc, base + "/healthz", seconds=30)
        h = {"Authorization": f"Bearer {token}", "X-Request-ID": "smoke-1"}
        with httpx.Client(base_url=base, headers=h, timeout=30) as c:
            assert c.get("/readyz").json()["status"] == "ready"
            appended = c.post(
                "/v1/sessions/messages",
                json={"session": {"platform": "discord", "channel": "1", "user": "2"}, "text": "こんにちは"},
            )
            assert appended.status_code == 201 and appended.headers["x-request-id"] == "smoke-1"
            window = c.get("/v1/sessions/window", params={"key": appended.json()["session_key"]})
            assert [m["text"] for m in window.json()["messages"]] == ["こんにちは"]
            assert c.post("/v1/users/2/memories", json={"content": "猫が好き"}).status_code == 201
            assert c.get("/v1/status").json()["sessions"]["active"] == 1
            assert c.get("/v1/status", headers={"Authorization": "Bearer nope"}).status_code == 401
            assert c.get("/openapi.json").status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0, stderr
    assert f"omoide HTTP API on {base} (docs: {base}/docs)" in stderr, stderr  # where it listens, at start


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """``pid`` runs (exists and is not a zombie)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from Linux /proc")
def test_serve_processes_share_one_port_and_run_the_workers_once(tmp_path):
    """``omoide serve --processes 2``: two HTTP processes answer on one port over one database,
    the background workers run in one process of their own, and Ctrl-C stops every process."""
    env = _env(tmp_path)
    token = json.loads(_cli(env, "keys", "create", "--workspace", "g1", "--json").stdout)["token"]
    port = _free_port()
    proc = subprocess.Popen(
        [*OMOIDE, "serve", "--processes", "2", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    family: list[int] = []
    try:
        deadline = time.monotonic() + 60
        _wait_until_up(proc, base + "/readyz", seconds=60)
        while time.monotonic() < deadline:  # uvicorn starts its processes one after the other
            family = _children(proc.pid)
            http = [p for p in family if "omoide.workers" not in _cmdline(p)]
            if len(http) >= 2:
                break
            time.sleep(0.3)
        workers = [p for p in family if "omoide.workers" in _cmdline(p)]
        assert len(workers) == 1 and len(family) >= 3, [_cmdline(p) for p in family]
        h = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=h, timeout=30) as c:
            keys = set()
            for i in range(8):  # new connections: the kernel spreads them over both processes
                with httpx.Client(base_url=base, headers=h, timeout=30) as one:
                    r = one.post(
                        "/v1/sessions/messages",
                        json={"session": {"platform": "discord", "channel": "1", "user": "2"}, "text": f"msg {i}"},
                    )
                    assert r.status_code == 201, r.text
                    keys.add(r.json()["session_key"])
            (key,) = keys
            window = c.get("/v1/sessions/window", params={"key": key}).json()["messages"]
            assert [m["text"] for m in window] == [f"msg {i}" for i in range(8)]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert f"omoide HTTP API on {base} (docs: {base}/docs), 2 processes, background workers in process" in stderr
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in family):
        assert time.monotonic() < deadline, "a child outlived `omoide serve`"
        time.sleep(0.2)
