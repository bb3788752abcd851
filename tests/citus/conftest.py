"""A 3-node Citus cluster (coordinator + 2 workers) for the store suites, built from the vendored tarball.

``scripts/citus-cluster`` builds Citus into ``~/.cache/omoide`` (once: about a minute and a
half of compiling; cached afterwards) and starts the nodes. The cluster is started once per
test run on free ports in a temporary directory and stopped at the end. Every test gets the
one cluster database, migrated (tables distributed by ``workspace_id``) and emptied with
``TRUNCATE`` (creating a database per test would mean creating the extension and registering
the workers again in each: seconds per test).

Tests that change the cluster's topology (``test_rebalance.py`` adds a worker) start one of their
own with :func:`own_cluster` instead (about 5–20 s on the 2-core machine, by load).

Skips with the reason when the tarball (``../shared/vendor/citus-*.tar.gz`` or
``OMOIDE_CITUS_TARBALL``) is missing or the machine cannot build it. Set
``OMOIDE_TEST_CITUS_URL`` to use a running cluster instead (its database must have the
``citus`` and ``vector`` extensions and its workers registered; it is emptied by the tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.machinery
import importlib.util
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "citus-cluster"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "citus: needs the local Citus cluster (tests/citus)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/citus/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.citus)


def load_cluster_script() -> types.ModuleType:
    """``scripts/citus-cluster`` as a module (it has no ``.py`` suffix)."""
    loader = importlib.machinery.SourceFileLoader("omoide_citus_cluster", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _ephemeral_low() -> int:
    """The lowest port of the kernel's ephemeral range (Linux: ``ip_local_port_range``; else IANA's 49152)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


def _free_port_run(count: int = 3) -> int:
    """A port p with p … p+count-1 all free on 127.0.0.1, below the kernel's ephemeral range.

    Outgoing connections take their source ports from that range, and the nodes open many to each
    other: a port chosen there was free when the cluster started but taken minutes later, when a
    test added a worker on its spare port. Below the range only listeners compete."""
    low = max(1024 + count, _ephemeral_low())
    draw = random.Random()
    for _ in range(200):
        base = draw.randrange(max(1024, low - 12_000), low - count)
        ok = True
        for port in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError(f"no run of {count} free ports found on 127.0.0.1")


@contextlib.contextmanager
def own_cluster(*, prefix: str = "omoide-citus-", spare_ports: int = 0) -> Iterator[dict[str, Any]]:
    """Build (cached) and start a coordinator + 2 workers in a temporary directory; stop them after.

    ``spare_ports``: free ports kept after the cluster's three (for workers added later). The
    state has ``script`` (the cluster module), ``tarball`` and ``base`` besides the script's
    JSON. Skips with the reason when the machine cannot build or run Citus."""
    script = load_cluster_script()
    try:
        tarball = script.find_tarball(None)
    except script.ClusterError as exc:
        pytest.skip(f"no Citus source to build the test cluster from: {exc}")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as an unprivileged user")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        pytest.skip("building Citus needs gcc and make (apt-get install gcc make)")
    started = time.monotonic()
    script.build(tarball, quiet=True)
    built = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(base, 0o755)  # as root, the nodes run as the omoide-citus user
    try:
        shards = int(os.environ.get("OMOIDE_TEST_CITUS_SHARDS", "8"))  # fewer than 32: cheaper fan-outs on 2 cores
        state = dict(script.start(tarball, base, _free_port_run(3 + spare_ports), shards=shards, quiet=True))
        state.update(build_seconds=round(built - started, 1), script=script, tarball=tarball, base=base)
        yield state
    finally:
        script.stop(base, mode="immediate")  # the data is deleted next: no checkpoint to wait for
        # deleting the nodes' WAL took ~20 s on the loaded test machine: let rm do it without waiting
        subprocess.Popen(["rm", "-rf", str(base)], start_new_session=True)


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[dict[str, Any]]:
    """The running cluster's state (``url``, ``worker_urls``, ``ports``, ``start_seconds``)."""
    external = os.environ.get("OMOIDE_TEST_CITUS_URL")
    if external:
        yield {"url": external, "worker_urls": [], "external": True}
        return
    with own_cluster() as state:
        yield state


_migrated: set[str] = set()


async def _empty_database(url: str) -> None:
    """Migrate once per run, then empty every omoide table (TRUNCATE keeps the distributed layout)."""
    import asyncpg

    from omoide.stores.postgres.store import PostgresStore

    if url not in _migrated:
        async with PostgresStore(url) as s:
            await s.migrate()
        _migrated.add(url)
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT logicalrelid::regclass::text AS t FROM pg_dist_partition")
        tables = ", ".join(r["t"] for r in rows)
        if tables:
            await conn.execute(f"TRUNCATE {tables} CASCADE")
        if await conn.fetchval("SELECT to_regclass('worker_state') IS NOT NULL"):  # coordinator-local
            await conn.execute("TRUNCATE worker_state")
    finally:
        await conn.close()


@pytest.fixture
async def citus_url(citus_cluster: dict[str, Any]) -> str:
    """The cluster's database, migrated and empty."""
    url = str(citus_cluster["url"])
    await _empty_database(url)
    return url


@pytest.fixture
def backend() -> str:
    """The suites parametrised over ``backend`` run once here, on PostgreSQL (the cluster)."""
    return "postgres"


@pytest.fixture
def pg_url(citus_url: str) -> str:
    """Suites written for ``pg_url`` run against the cluster in this directory."""
    return citus_url


@pytest.fixture
async def store(citus_url: str, tmp_path: Path) -> AsyncIterator[Any]:
    """The conformance suites' fixture, on the Citus cluster (one mode: ``citus``)."""
    from omoide.settings import Settings
    from omoide.stores import open_store

    settings = Settings(database_url=citus_url, transcripts_dir=tmp_path / "transcripts", db_pool_max=25)
    async with open_store(settings=settings) as s:
        yield s


__all__ = ["asyncio", "load_cluster_script", "own_cluster"]
