"""SQLite: the inspector's filters (sessions by channel / user, sources archived from one session)
are index searches, not scans of the workspace (migration 12)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from omoide.stores import open_store
from omoide.stores.sessions import SessionFilter
from omoide.stores.sqlite import _knowledge, _sessions


class _Recorder(sqlite3.Connection):
    """A connection that keeps the SQL it runs, so the test can ask SQLite for the plans."""

    seen: list[tuple[str, tuple[object, ...]]]

    def execute(self, sql: str, parameters: object = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        self.seen.append((sql, tuple(parameters)))  # type: ignore[arg-type]
        return super().execute(sql, parameters)  # type: ignore[arg-type]


async def test_filters_search_their_indexes(tmp_path: Path) -> None:
    path = tmp_path / "plans.db"
    store = open_store(f"sqlite:///{path}")
    await store.open()
    await store.close()
    conn = sqlite3.connect(path, factory=_Recorder)
    conn.seen = []
    _sessions.list_sessions(conn, SessionFilter("g1", channel_id="c1"), 50, 0)
    _sessions.list_sessions(conn, SessionFilter("g1", user_id="u1"), 50, 0)
    _knowledge.list_sources(conn, "g1", 7, 50, 0)
    plans = [
        " ".join(str(row[-1]) for row in sqlite3.Connection.execute(conn, "EXPLAIN QUERY PLAN " + sql, params))
        for sql, params in conn.seen
    ]
    conn.close()
    assert "sessions_workspace_channel_active_idx" in plans[0], plans[0]
    assert "sessions_workspace_user_active_idx" in plans[1], plans[1]
    assert "knowledge_sources_origin_session_idx" in plans[2], plans[2]
    assert all("TEMP B-TREE" not in plan for plan in plans[:2]), plans  # newest first straight from the index
