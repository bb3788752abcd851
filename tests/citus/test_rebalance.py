"""Adding a Citus worker and moving shards to it while omoide keeps writing: nothing is lost.

What an operator does when the cluster needs another node (docs/scale.md, "Adding a node"):
start the node, ``SELECT citus_add_node(host, port)`` on the coordinator, then ``SELECT
citus_rebalance_start()`` and wait with ``SELECT citus_rebalance_wait()``. Here that runs
against a cluster of its own (the test adds a node, so it never touches the shared test cluster)
while omoide, through :class:`omoide.Memory`, keeps appending to sessions of 12 workspaces and
archiving and embedding them. The shards move with ``shard_transfer_mode := 'block_writes'``
(writes to a moving shard group wait for its copy), the mode docs/scale.md recommends for now.

Afterwards: every appended message is in long-term memory exactly once (archived and
embedded), every workspace's search returns k hits, and shards live on the new node. The only
error allowed is the one Citus documents for the switch-over: its distributed deadlock detector
may cancel a write transaction that waits on a shard being moved (SQLSTATE 40P01, rolled back
whole). omoide's append runs such a transaction again by itself; should one still fail, the
writers send the message again, as a bot would (same platform id, so a retry never stores it
twice); anything else fails the test.

Logical moves (docs/scale.md): with Citus' default mode (logical replication; the cluster has
``wal_level = logical``) and the test cluster's ``synchronous_commit = off``, 5 of 14 runs lost 1–2
appends. ``scripts/citus-move-repro`` reproduced it without omoide: a Citus defect, the move's final
catch-up does not wait for the source's asynchronous commits of its last moments. With
``OMOIDE_TEST_REBALANCE_MODE=auto`` the test runs that mode on a cluster with ``synchronous_commit =
on`` (unless ``OMOIDE_CITUS_SYNCHRONOUS_COMMIT`` says otherwise), and every difference fails; only with
``off`` is exactly the known loss reported as an expected failure with the ids and where they lived.
With ``block_writes`` every difference fails.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from citus.conftest import own_cluster
from omoide import Memory, Message
from omoide.errors import StoreError
from omoide.settings import Settings
from workers.helpers import archived_ids, check_all_done

WORKSPACES = [f"guild-{i}" for i in range(12)]  # spread over the 8 shards of the test cluster
WRITERS = 4
DEADLOCK = "40P01"
MODE = os.environ.get("OMOIDE_TEST_REBALANCE_MODE", "block_writes")
"""What docs/scale.md recommends; ``auto`` (Citus' default: logical replication) reproduces the open loss."""
K = 5


@pytest.fixture
def cluster_to_grow(monkeypatch: pytest.MonkeyPatch) -> Any:
    if os.environ.get("OMOIDE_TEST_CITUS_URL"):
        pytest.skip("adds a node: needs a cluster of its own (unset OMOIDE_TEST_CITUS_URL)")
    if MODE != "block_writes":
        # a logical move loses the source's asynchronous commits (docs/scale.md, scripts/citus-move-repro):
        # the mode is tested as documented, with PostgreSQL's default, unless the caller says otherwise
        monkeypatch.setenv("OMOIDE_CITUS_SYNCHRONOUS_COMMIT", os.environ.get("OMOIDE_CITUS_SYNCHRONOUS_COMMIT", "on"))
    with own_cluster(prefix="omoide-citus-grow-", spare_ports=1) as state:
        yield state


async def _synchronous_commit(url: str) -> str:
    """The cluster's ``synchronous_commit`` on the workers (what decides the logical-move loss)."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT result FROM run_command_on_workers('SHOW synchronous_commit')")
        return ",".join(sorted({str(r["result"]) for r in rows}))
    finally:
        await conn.close()


async def _shards_per_node(url: str) -> dict[int, int]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT nodeport, count(*) AS n FROM citus_shards GROUP BY nodeport")
        return {int(r["nodeport"]): int(r["n"]) for r in rows}
    finally:
        await conn.close()


async def _explain_any_difference(
    url: str, mem: Memory, appended: list[Message], archived: Any, move_started: datetime
) -> None:
    """Fail with what differs (lost, twice, still unarchived) rather than check_all_done's bare assert."""
    got = Counter(await archived_ids(mem.store))
    want = Counter(m.id for m in appended)
    if got == want:
        return
    missing = sorted(int(i) for i in set(want) - set(got) if i is not None)
    conn = await asyncpg.connect(url)
    try:
        still = await conn.fetch(
            "SELECT m.id, m.session_id, m.seq, s.archived_seq, s.last_seq, m.workspace_id FROM session_messages m "
            "JOIN sessions s ON s.id = m.session_id AND s.workspace_id = m.workspace_id "
            "WHERE m.id = ANY($1::bigint[]) ORDER BY m.id",
            missing,
        )
        lost_sessions = sorted({int(m.session_id) for m in appended if m.id in set(missing) and m.session_id})
        shards = await conn.fetch(
            "SELECT id, workspace_id, get_shard_id_for_distribution_column('sessions', workspace_id) AS shard "
            "FROM sessions WHERE id = ANY($1::bigint[])",
            lost_sessions,
        )
    finally:
        await conn.close()
    lost_at = {(m.session_id, m.seq) for m in appended if m.id in set(missing)}
    twice = [i for i, n in got.items() if n > 1]
    unknown = sorted(set(got) - set(want))
    detail = (
        f"missing {missing[:20]} ({len(missing)}), twice {twice}, never appended {unknown[:20]}; of the missing, "
        f"still stored unarchived: {[dict(r) for r in still][:10]} ({len(still)}); last archive run: {archived}; "
        f"their sessions' shards (sessions table): {[dict(r) for r in shards]}; lost: "
        f"{[(m.id, m.session_id, m.seq, m.created_at.isoformat()) for m in appended if m.id in set(missing)][:10]}; "
        f"appended with a lost message's (session, seq) too (the whole append lost, its seq reused): "
        f"{[(m.id, m.session_id, m.seq) for m in appended if (m.session_id, m.seq) in lost_at and m.id not in set(missing)]}"
    )
    lost = [m for m in appended if m.id in set(missing)]
    if (
        MODE != "block_writes"
        and await _synchronous_commit(url) != "on"
        and missing
        and not twice
        and not unknown
        and not still
        and all(m.created_at >= move_started for m in lost)
    ):
        # the Citus defect scripts/citus-move-repro reproduces: the source's asynchronous commits of the last
        # moments before the move blocked writes are not waited for (docs/scale.md); seen in 5 of 14 runs here
        pytest.xfail(f"known Citus defect with synchronous_commit=off, appends lost in the logical move: {detail}")
    pytest.fail(f"archived != appended: {detail}")


async def test_a_worker_added_and_rebalanced_under_write_load_loses_nothing(
    cluster_to_grow: dict[str, Any], tmp_path: Path
) -> None:
    state = cluster_to_grow
    url = str(state["url"])
    settings = Settings(
        database_url=url,
        transcripts_dir=tmp_path / "transcripts",
        embedder="hashing",
        archive_idle_seconds=0,
        archive_batch_size=20,
        db_pool_max=12,
    )
    appended: list[Message] = []
    errors: list[str] = []
    retried: list[str] = []  # appends cancelled by Citus' distributed deadlock detector, then sent again
    slowest: list[float] = [0.0]  # the longest append while shards moved
    moving = False
    stop = asyncio.Event()
    async with Memory.open(settings) as mem:
        keys = [
            (mem.session_key(platform="discord", workspace=w, channel="c", user=f"{w}-u{j}"), f"{w}-u{j}")
            for w in WORKSPACES
            for j in range(2)
        ]

        async def append(key: Any, message: Message) -> None:
            """Append as a bot would: a deadlock victim (40P01, rolled back whole) is sent again, with
            the same platform id, so a retry can never store it twice."""
            while True:
                began = time.monotonic()
                try:
                    appended.append(await mem.append(key, message))
                except StoreError as exc:
                    if exc.details.get("sqlstate") != DEADLOCK:
                        errors.append(f"append: {exc!r}")
                        raise
                    retried.append(exc.message)
                    continue
                if moving:
                    slowest[0] = max(slowest[0], time.monotonic() - began)
                return

        async def writer(mine: list[tuple[Any, str]]) -> None:
            counters = dict.fromkeys(range(len(mine)), 0)
            turn = 0
            while not stop.is_set():
                i = turn % len(mine)
                key, user = mine[i]
                n = counters[i]
                author = user if n % 2 == 0 else f"{user}-friend"
                text = f"{author} のメッセージ {n}: 週末は山に登る予定です。天気が心配です。"
                await append(key, Message.user(text, author_id=author, message_id=f"{user}-{n}"))
                counters[i] += 1
                turn += 1
                await asyncio.sleep(0.05)  # ~20 appends/s per writer: load, not a flood to archive at the end

        async def archive_and_embed() -> None:
            while not stop.is_set():
                try:
                    await mem.knowledge.archive(now=True)
                    await mem.knowledge.embed()
                except StoreError as exc:  # `omoide worker` logs it and runs again, as this loop does
                    if exc.details.get("sqlstate") != DEADLOCK:
                        errors.append(f"archive/embed: {exc!r}")
                    retried.append(exc.message)
                await asyncio.sleep(0.05)

        tasks = [asyncio.create_task(writer(keys[w::WRITERS])) for w in range(WRITERS)]
        tasks.append(asyncio.create_task(archive_and_embed()))
        await asyncio.sleep(2)  # every workspace has sessions, sources and vectors before the move
        before = len(appended)

        script, base = state["script"], state["base"]
        new_port = int(state["ports"][-1]) + 1
        grown = await asyncio.to_thread(script.add_worker, base, port=new_port)
        assert new_port in grown["ports"]
        started = time.monotonic()
        move_started = datetime.now(UTC)
        moving = True
        conn = await asyncpg.connect(url)
        try:
            job = await conn.fetchval(
                "SELECT citus_rebalance_start(shard_transfer_mode := $1::citus.shard_transfer_mode)", MODE
            )
            await conn.execute("SELECT citus_rebalance_wait()")
            tasks_done = await conn.fetch(
                "SELECT status::text, command FROM pg_dist_background_task WHERE job_id = $1 ORDER BY task_id", job
            )
        finally:
            await conn.close()
        moving = False
        took = time.monotonic() - started
        during = len(appended) - before
        await asyncio.sleep(1)  # writes routed to the moved shards afterwards
        stop.set()
        await asyncio.gather(*tasks)
        print(
            f"rebalance job {job}: {[(t['status'], t['command']) for t in tasks_done]} in {took:.1f} s; "
            f"{during} messages appended meanwhile (slowest append {slowest[0]:.2f} s), "
            f"{len(appended)} in all; retried after a distributed deadlock: {len(retried)}; errors: {errors}"
        )
        assert tasks_done and all(t["status"] == "done" for t in tasks_done)

        assert errors == []
        assert during > 0  # the writes really ran while shards moved
        shards = await _shards_per_node(url)
        assert shards.get(new_port, 0) > 0, shards
        finishing = time.monotonic()
        archived = await mem.knowledge.archive(now=True)
        report = await mem.knowledge.embed()
        assert report.failed == 0
        await _explain_any_difference(url, mem, appended, archived, move_started)
        await check_all_done(mem, appended)  # every message once in long-term memory, all embedded
        for workspace in WORKSPACES:
            result = await mem.search("天気が心配", workspace=workspace, k=K)
            assert len(result.hits) == K, (workspace, result.notes)
        print(f"final archive, embed and checks: {time.monotonic() - finishing:.1f} s")
