"""The SQLite vector prefilter: a projection for large matrices, exact scores for a pool of rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, EmbeddingRow, SourceDraft
from omoide.stores.search import SearchFilters
from omoide.stores.sqlite import SqliteStore
from omoide.stores.sqlite._prefilter import DIMS, candidates, pool_size, project

MODEL = "m"
WIDTH = 4 * DIMS  # the narrowest vectors a projection is made for


def _clustered(n: int, seed: int, width: int = WIDTH) -> np.ndarray:
    """``n`` unit vectors shaped like text embeddings: around 12 centres, varying mostly along a
    few dozen directions (a decaying spectrum), with a little noise in every dimension."""
    rng = np.random.default_rng(0)  # the same space for every seed
    centres = rng.standard_normal((12, width))
    directions = rng.standard_normal((24, width)) * np.linspace(1.5, 0.3, 24)[:, None]
    rng = np.random.default_rng(seed)
    rows = (
        centres[rng.integers(0, 12, n)]
        + rng.standard_normal((n, 24)) @ directions
        + 0.1 * rng.standard_normal((n, width))
    )
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def test_projection_only_for_large_and_wide_matrices() -> None:
    rows = _clustered(300, 1)
    assert project(rows, min_rows=301) is None
    assert project(rows, min_rows=0) is None  # 0: never
    assert project(_clustered(300, 1, width=DIMS * 2), min_rows=10) is None  # too narrow to save much
    made = project(rows, min_rows=300)
    assert made is not None
    assert made.rows.shape == (300, DIMS) and made.rows.dtype == np.float32
    np.testing.assert_allclose(made.basis.T @ made.basis, np.eye(DIMS), atol=1e-4)  # orthonormal


def test_pool_size() -> None:
    assert pool_size(100_000, 200) == 6_250  # a sixteenth of the rows
    assert pool_size(30_000, 200) == 4_000  # 20 x k
    assert pool_size(1_000, 200) == 1_000  # never more than the rows


def test_candidates_hold_the_exact_nearest_rows() -> None:
    rows = _clustered(2_000, 2)
    made = project(rows, min_rows=1)
    assert made is not None
    for q in _clustered(20, 3):
        found = candidates(made, q, 200)
        assert found.shape == (200,) and np.all(np.diff(found) > 0)  # distinct positions, ascending
        exact = np.argsort(-(rows @ q))[:20]
        assert set(exact.tolist()) <= set(found.tolist())


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied at the boundary"])
def test_candidates_are_the_rows_a_partition_of_positions_picks(ties: bool) -> None:
    """The pool is found from the scores' own partition; with a tie at the pool's boundary (or a
    NaN score) it falls back to partitioning positions: either way the rows are those the plain
    ``argpartition`` of the scores picks."""
    rows = _clustered(3_000, 4)
    if ties:
        rows[1_000:1_400] = rows[7]  # 400 identical rows: one score, wherever the boundary falls
    made = project(rows, min_rows=1)
    assert made is not None
    for q in [*_clustered(10, 5), rows[7]]:
        approx = np.vecdot(made.rows, q @ made.basis)
        for pool in (1, 200, 1_200, 2_999):
            expected = np.sort(np.argpartition(-approx, pool - 1)[:pool])
            np.testing.assert_array_equal(candidates(made, q, pool), expected)
    assert candidates(made, rows[0], 3_000).tolist() == list(range(3_000))


async def _store(tmp_path: Path, name: str, prefilter_rows: int) -> Any:
    url = f"sqlite:///{tmp_path / name}"
    settings = Settings(database_url=url, transcripts_dir=tmp_path / "t", sqlite_vector_prefilter_rows=prefilter_rows)
    return SqliteStore(url, settings=settings, migrate=True)


async def _fill(store: Any, vectors: np.ndarray, private_every: int = 0) -> list[int]:
    ids: list[int] = []
    for start in range(0, len(vectors), 200):
        batch = vectors[start : start + 200]
        private = bool(private_every) and (start // 200) % private_every == 1
        _, new = await store.knowledge.add_source(
            SourceDraft(workspace_id="g1", type="document", title=f"d{start}", private=private, members=("u1",)),
            [ChunkDraft(content=f"c{start + i}", lexical=f"c{start + i}", token_count=1) for i in range(len(batch))],
        )
        await store.knowledge.put_embeddings(
            model=MODEL, dimensions=WIDTH, rows=[EmbeddingRow(c, v) for c, v in zip(new, batch, strict=True)]
        )
        ids.extend(new)
    return ids


async def test_a_large_workspace_is_ranked_through_the_prefilter_with_exact_scores(tmp_path: Path) -> None:
    vectors = _clustered(1_200, 4)
    queries = _clustered(25, 5)
    async with await _store(tmp_path, "pre.db", 1_000) as pre, await _store(tmp_path, "exact.db", 0) as exact:
        await _fill(pre, vectors)
        await _fill(exact, vectors)
        for q in queries:
            got = await pre.search.vector_ranking(model=MODEL, query=q, filters=SearchFilters("g1"), k=20)
            want = await exact.search.vector_ranking(model=MODEL, query=q, filters=SearchFilters("g1"), k=20)
            assert [r.chunk_id for r in got] == [r.chunk_id for r in want]
            assert [r.score for r in got] == pytest.approx([r.score for r in want], abs=1e-6)
        assert pre._db.vector_cache._entries[("g1", MODEL)].projection is not None
        assert exact._db.vector_cache._entries[("g1", MODEL)].projection is None


async def test_the_prefilter_never_returns_what_the_viewer_may_not_see(tmp_path: Path) -> None:
    vectors = _clustered(1_200, 6)
    async with await _store(tmp_path, "pre.db", 1_000) as store:
        ids = await _fill(store, vectors, private_every=2)  # every other 200 rows are private to u1
        private = {ids[i] for start in (200, 600, 1000) for i in range(start, start + 200)}
        for q in _clustered(10, 7):
            for filters in (SearchFilters("g1", viewer="u2"), SearchFilters("g1", public_only=True)):
                ranked = await store.search.vector_ranking(model=MODEL, query=q, filters=filters, k=200)
                assert len(ranked) == 200 and not {r.chunk_id for r in ranked} & private
            mine = await store.search.vector_ranking(
                model=MODEL, query=q, filters=SearchFilters("g1", viewer="u1"), k=5
            )
            everyone = await store.search.vector_ranking(model=MODEL, query=q, filters=SearchFilters("g1"), k=5)
            assert mine == everyone  # a member sees the private rows too
        # every visible row asked for: all of them come back, none of the private ones
        visible = await store.search.vector_ranking(
            model=MODEL, query=vectors[0], filters=SearchFilters("g1", viewer="u2"), k=600
        )
        assert len(visible) == 600 and not {r.chunk_id for r in visible} & private
