"""The line reader (issue 16): the bundled multilingual USE model itself, its unit features (the
line's own and its conversation's), the model choice (``hybrid+reader`` only when the candidates
have the reader's vectors), and end to end — the embedding worker stores each message's reader vector, ``omoide reindex --units`` gives
them to chunks embedded before, and ``line_reader = "off"`` leaves the search as it was.

Real model, real SQLite files; the ``hashing`` embedder for the chunk vectors.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from omoide import Memory
from omoide.errors import InvalidInput
from omoide.providers.local import line_reader as reader_module
from omoide.providers.local.line_reader import LineReader, line_reader, model_path
from omoide.search.units import (
    FEATURES,
    READER_FEATURES,
    READER_SUFFIX,
    UnitWeights,
    score_units,
    shipped_weights,
    weights_for,
)
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkId
from omoide.stores.units import READER_DIMENSIONS, ChunkUnits, chunk_lines

from .test_units_pipeline import CHAT, archive_chat, candidates_of, drafts_of, units_of

pytestmark = pytest.mark.skipif(model_path() is None, reason="the line reader is not installed on this platform")


@pytest.fixture(scope="module")
def reader() -> LineReader:
    got = line_reader()
    assert got is not None
    return got


def test_it_reads_japanese_and_english_into_unit_vectors(reader: LineReader) -> None:
    texts = ["果物をよく買います", "フルーツが好きです", "猫を飼っています", "I buy fruit every week", ""]
    m = reader.encode(texts)
    assert m.shape == (5, READER_DIMENSIONS) and m.dtype == np.float32
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    sims = m @ m.T
    assert sims[0, 1] > sims[0, 2]  # fruit is nearer fruit than cats, across scripts
    assert sims[0, 3] > sims[2, 3]  # and across languages
    assert reader.encode([]).shape == (0, READER_DIMENSIONS)
    with pytest.raises(InvalidInput):
        reader.encode(["ok", 3])  # type: ignore[list-item]


def test_off_means_no_reader() -> None:
    assert line_reader("off") is None


def test_a_missing_package_is_none_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_module, "_PACKAGE", "omoide_no_such_package")
    assert model_path() is None
    reader_module._load.cache_clear()
    try:
        assert line_reader() is None
    finally:
        monkeypatch.undo()
        reader_module._load.cache_clear()
    assert line_reader() is not None


def reader_units(reader: LineReader, window: int = 4) -> tuple[list, dict[int, ChunkUnits]]:
    drafts = drafts_of(CHAT, window=window, overlap=1)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    for cand, d in zip(cands, drafts, strict=True):
        lines = chunk_lines(d.content, d.location) or []
        got = units[int(cand.chunk.chunk_id)]
        units[int(cand.chunk.chunk_id)] = ChunkUnits(got.lexical, got.vectors, reader.encode([x.text for x in lines]))
    return cands, units


def test_the_reader_features_are_the_raw_cosine_and_its_neighbourhood_mean(reader: LineReader) -> None:
    cands, units = reader_units(reader)
    query = "Who takes a pottery class?"
    q = reader.encode([query])[0]
    scored = score_units(query, [], None, cands, units, UnitWeights({"reader_unit": 1.0}), reader_query=q)
    assert scored[0].line is not None and "pottery" in scored[0].line.text
    for u in scored:
        assert u.line is not None
        block = units[int(u.candidate.chunk.chunk_id)].reader
        assert block is not None
        cos = block @ q
        i = u.line.position
        assert u.features["reader_unit"] == pytest.approx(float(cos[i]), abs=1e-5)
        near = cos[max(0, i - 1) : i + 2]
        assert u.features["reader_context"] == pytest.approx(float(near.mean()), abs=1e-5)


def test_the_source_features_see_each_conversation_through_its_best_line(reader: LineReader) -> None:
    """Two conversations (sources): each line gets its source's best reader cosine, its own
    minus that, the mean of the source's three best (a message two overlapping chunks hold
    counts once) and the source's place among the sources by that best."""
    cands, units = reader_units(reader, window=4)  # CHAT in two chunks sharing one message: source 1
    other = drafts_of(
        [
            ("u3", "Ken", "The weather was rainy all weekend."),
            ("u4", "Ann", "I fixed my bike and cleaned the garage."),
            ("u3", "Ken", "We watched a long movie about trains."),
        ]
    )
    more = candidates_of(other, source=2)
    more = [
        dataclasses.replace(c, chunk=dataclasses.replace(c.chunk, chunk_id=ChunkId(100 + i)), position=len(cands) + i)
        for i, c in enumerate(more)
    ]
    for cand, d in zip(more, other, strict=True):
        lines = chunk_lines(d.content, d.location) or []
        units[int(cand.chunk.chunk_id)] = ChunkUnits(d.unit_lexical, None, reader.encode([x.text for x in lines]))
    query = "Who takes a pottery class?"
    q = reader.encode([query])[0]
    scored = score_units(query, [], None, [*cands, *more], units, UnitWeights({"reader_unit": 1.0}), reader_query=q)
    by_source: dict[int, dict[object, float]] = {}
    for u in scored:
        by_source.setdefault(int(u.candidate.chunk.source_id), {})[u.message_id] = u.features["reader_unit"]
    assert len(by_source[1]) == len(CHAT)  # the shared message once
    best = {s: max(v.values()) for s, v in by_source.items()}
    assert best[1] > best[2]  # the pottery line is in the first conversation
    for u in scored:
        s = int(u.candidate.chunk.source_id)
        f = u.features
        assert f["reader_source_best"] == pytest.approx(best[s], abs=1e-6)
        assert f["reader_source_gap"] == pytest.approx(f["reader_unit"] - best[s], abs=1e-6)
        top3 = sorted(by_source[s].values())[-3:]
        assert f["reader_source_top3"] == pytest.approx(float(np.mean(top3)), abs=1e-6)
        assert f["reader_source_rank"] == (0.0 if s == 1 else 1.0)
    # without the query's reader vector every source feature is one finite value (the median fill)
    for u in score_units(query, [], None, [*cands, *more], units, UnitWeights({})):
        assert all(math.isfinite(u.features[name]) for name in READER_FEATURES)


def test_units_without_reader_vectors_take_the_median(reader: LineReader) -> None:
    cands, units = reader_units(reader)
    last = int(cands[-1].chunk.chunk_id)
    units[last] = ChunkUnits(units[last].lexical, units[last].vectors, None)  # embedded before the reader
    q = reader.encode(["pottery"])[0]
    scored = score_units("pottery", [], None, cands, units, UnitWeights({}), reader_query=q)
    blocks = [u.reader for cid, u in units.items() if cid != last and u.reader is not None]
    present = np.concatenate([b @ q for b in blocks])  # every row with the reader's vectors
    missing = [u.features["reader_unit"] for u in scored if int(u.candidate.chunk.chunk_id) == last]
    assert missing and all(v == pytest.approx(float(np.median(present)), abs=1e-5) for v in missing)
    # no query vector: every reader feature is the same finite value
    for u in score_units("pottery", [], None, cands, units, UnitWeights({})):
        assert all(math.isfinite(u.features[name]) for name in READER_FEATURES)


def test_the_reader_model_is_chosen_only_with_reader_vectors() -> None:
    for language, query in (("default", "Who takes a pottery class?"), ("ja", "陶芸教室に通っているのは誰？")):
        modes = shipped_weights()[language]
        assert "hybrid" + READER_SUFFIX in modes, language
        assert weights_for(query, "hybrid", reader=True) is modes["hybrid" + READER_SUFFIX]
        assert weights_for(query, "hybrid", reader=False) is modes["hybrid"]
        assert weights_for(query, "lexical", reader=True) is modes["lexical"]  # lexical has no reader model
        # the model without the reader reads none of its features
        base = modes["hybrid"]
        assert not set(base.weights) & set(READER_FEATURES)
        if base.trees is not None:
            x = np.zeros((3, len(FEATURES)))
            y = x.copy()
            y[:, [FEATURES.index(n) for n in READER_FEATURES]] = np.random.default_rng(0).normal(
                size=(3, len(READER_FEATURES))
            )
            assert np.array_equal(base.score(x), base.score(y))


# ----------------------------------------------------------------------------- end to end


def sqlite_settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'omoide.db'}", transcripts_dir=tmp_path / "t", embedder="hashing", **kw
    )


async def test_embedding_stores_the_reader_vectors_and_search_uses_them(tmp_path: Path, reader: LineReader) -> None:
    async with Memory.open(sqlite_settings(tmp_path)) as mem:
        stored = await archive_chat(mem)
        (chunk_id,) = [r[0] for r in sqlite3.connect(tmp_path / "omoide.db").execute("SELECT id FROM knowledge_chunks")]
        units = await mem.store.search.fetch_units([chunk_id], model=mem.embedder.model_id)
        got = units[chunk_id].reader
        assert got is not None and got.shape == (len(CHAT), READER_DIMENSIONS)
        expected = reader.encode([text for _, _, text in CHAT])
        assert np.allclose(got, expected, atol=2e-3)  # stored as float16
        result = await mem.search("Who started a pottery class?", workspace="g1", k=3, explain=True)
        top = result.hits[0]
        assert top.unit == "turn" and top.message_ids == (stored[5].id,)
        assert top.features is not None
        q = reader.encode(["Who started a pottery class?"])[0]
        assert top.features["reader_unit"] == pytest.approx(float(expected[5] @ q), abs=5e-3)


async def test_reindex_units_gives_reader_vectors_to_chunks_embedded_before(tmp_path: Path) -> None:
    async with Memory.open(sqlite_settings(tmp_path, line_reader="off")) as mem:
        await archive_chat(mem, CHAT * 2)  # two chunks, embedded without the reader
        status = await mem.knowledge.status()
        assert status.reader_vectors_missing.get(mem.embedder.model_id) == 2
    with sqlite3.connect(tmp_path / "omoide.db") as db:
        assert db.execute("SELECT count(*) FROM chunk_embeddings WHERE reader_vectors IS NULL").fetchone() == (2,)
    db.close()

    with sqlite3.connect(tmp_path / "omoide.db") as db:
        units_before = db.execute("SELECT unit_vectors FROM chunk_embeddings ORDER BY chunk_id").fetchall()
    db.close()

    async with Memory.open(sqlite_settings(tmp_path)) as mem:
        before = await mem.search("pottery class on Tuesdays", workspace="g1", k=3, explain=True)
        assert before.hits[0].unit == "turn"  # ranked without the reader meanwhile
        report = await mem.knowledge.reindex_units()
        assert report.vectors == 2 and report.units == 0  # the reader's vectors only
        status = await mem.knowledge.status()
        assert status.reader_vectors_missing.get(mem.embedder.model_id, 0) == 0
        assert (await mem.knowledge.reindex_units()).vectors == 0  # resumable: nothing left
    with sqlite3.connect(tmp_path / "omoide.db") as db:
        assert db.execute("SELECT count(*) FROM chunk_embeddings WHERE reader_vectors IS NULL").fetchone() == (0,)
        # the unit vectors were not embedded again
        assert db.execute("SELECT unit_vectors FROM chunk_embeddings ORDER BY chunk_id").fetchall() == units_before
    db.close()


async def test_off_stores_no_reader_vectors_and_ranks_without_them(tmp_path: Path) -> None:
    async with Memory.open(sqlite_settings(tmp_path, line_reader="off")) as mem:
        stored = await archive_chat(mem)
        result = await mem.search("pottery class on Tuesdays", workspace="g1", k=3, explain=True)
        assert result.hits[0].message_ids == (stored[5].id,)
        features = result.hits[0].features
        assert features is not None and features["reader_unit"] == 0.0  # no unit has them: 0
    with sqlite3.connect(tmp_path / "omoide.db") as db:
        assert db.execute("SELECT count(*) FROM chunk_embeddings WHERE reader_vectors IS NOT NULL").fetchone() == (0,)
    db.close()
