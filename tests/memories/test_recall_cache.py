"""SQLite recall cache: this process's writes update the cached indexes in place (no rebuild),
and they always end in exactly the state a fresh build would give; a write from another store
instance (process) on the same file forces a rebuild."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from omoide import Memory
from omoide.settings import Settings
from omoide.stores.memories import MemoryChanges, MemoryDraft
from omoide.stores.sqlite import _memory_cache as mops
from omoide.stores.sqlite.store import SqliteStore
from omoide.text import tokenize_for_search

MODEL = "test-model@8"
WORDS = ["誕生日", "ラーメン", "osaka", "tokyo", "cat", "coffee", "映画", "旅行", "python", "tea", "rain", "sun"]


def _vec(rng: random.Random, dims: int = 8) -> np.ndarray:
    return np.array([rng.gauss(0, 1) for _ in range(dims)], dtype=np.float32)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))


def _draft(text: str, user: str = "u1", category: str = "general") -> MemoryDraft:
    return MemoryDraft("g1", user, text, " ".join(tokenize_for_search(text)), category, (), {})


def _entries(store: SqliteStore, user: str = "u1") -> dict[tuple[str, ...], object]:
    return {k: e for k, e in store._db.memory_cache._entries.items() if k[2] == user}


async def _rankings(store: SqliteStore, rng: random.Random) -> list[list[tuple[int, float]]]:
    """Vector and lexical results (ids and rounded scores) for a few fixed queries."""
    out: list[list[tuple[int, float]]] = []
    for _ in range(4):
        q = _vec(rng)
        hits = await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=q, k=50)
        out.append([(int(m.id), s) for m, s in hits])
    for word in WORDS:
        hits = await store.memories.memory_lexical_search("g1", "u1", tokens=tokenize_for_search(word), k=50)
        out.append([(int(m.id), s) for m, s in hits])
    return out


@pytest.fixture
def db(tmp_path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp_path / 'm.db'}", transcripts_dir=tmp_path)


async def test_own_writes_update_the_cache_in_place_and_match_a_fresh_build(db: Settings):
    rng = random.Random(7)
    async with SqliteStore(db.database_url, settings=db, migrate=True) as store:
        ids = [
            int((await store.memories.insert_memory(_draft(_text(rng)), model=MODEL, vector=_vec(rng))).id)
            for _ in range(40)
        ]
        await _rankings(store, random.Random(1))  # builds the indexes
        built = _entries(store)
        assert len(built) == 2
        for step in range(60):
            op = rng.random()
            if op < 0.4 or not ids:
                ids.append(
                    int((await store.memories.insert_memory(_draft(_text(rng)), model=MODEL, vector=_vec(rng))).id)
                )
            elif op < 0.6:
                text = _text(rng)
                changes = MemoryChanges(content=text, lexical=" ".join(tokenize_for_search(text)))
                await store.memories.update_memory("g1", "u1", rng.choice(ids), changes, model=MODEL, vector=_vec(rng))
            elif op < 0.7:  # new text without a vector: the old vector goes
                text = _text(rng)
                changes = MemoryChanges(content=text, lexical=" ".join(tokenize_for_search(text)))
                await store.memories.update_memory("g1", "u1", rng.choice(ids), changes)
            elif op < 0.8:  # a vector only
                await store.memories.update_memory(
                    "g1", "u1", rng.choice(ids), MemoryChanges(category="x"), model=MODEL, vector=_vec(rng)
                )
            else:
                victim = ids.pop(rng.randrange(len(ids)))
                await store.memories.delete_memory("g1", "u1", victim)
            seed = 100 + step
            mine = await _rankings(store, random.Random(seed))
            assert _entries(store) == built, "an own write must not rebuild the cache"
            async with SqliteStore(db.database_url, settings=db, migrate=False) as fresh:
                theirs = await _rankings(fresh, random.Random(seed))
            for got, want in zip(mine, theirs, strict=True):
                assert [i for i, _ in got] == [i for i, _ in want], f"step {step}"
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5), f"step {step}"


async def test_recall_sees_exactly_the_new_state_after_insert_update_delete(tmp_path: Path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        store = mem.store
        assert isinstance(store, SqliteStore)
        osaka = (await mem.remember("I live in Osaka", workspace="g1", user="u1")).memory
        await mem.remember("好きな食べ物はラーメン", workspace="g1", user="u1")
        assert (await mem.recall("Osaka", workspace="g1", user="u1"))[0].memory.id == osaka.id
        built = _entries(store)

        cat = (await mem.remember("My cat is called Tama", workspace="g1", user="u1")).memory
        hits = await mem.recall("cat Tama", workspace="g1", user="u1")
        assert hits[0].memory == cat and hits[0].ranks == {"vector": 1, "lexical": 1}

        await mem.memories.update("g1", "u1", osaka.id, content="I moved to Sapporo")
        hits = await mem.recall("Sapporo", workspace="g1", user="u1")
        assert hits[0].memory.content == "I moved to Sapporo" and hits[0].ranks == {"vector": 1, "lexical": 1}
        assert all("Osaka" not in h.memory.content for h in await mem.recall("Osaka", workspace="g1", user="u1"))

        await mem.memories.delete("g1", "u1", cat.id)
        assert cat.id not in {h.memory.id for h in await mem.recall("cat Tama", workspace="g1", user="u1")}
        assert _entries(store) == built  # the same index objects: updated, never rebuilt

        # another user's writes leave u1's indexes alone (and never show up in u1's recall)
        await mem.remember("My cat is called Tama", workspace="g1", user="u2")
        assert cat.id not in {h.memory.id for h in await mem.recall("cat Tama", workspace="g1", user="u1")}
        assert _entries(store) == built

        report = await mem.forget_user(workspace="g1", user="u1")
        assert report.memories == 2 and _entries(store) == {}
        assert await mem.recall("Sapporo", workspace="g1", user="u1") == []


async def test_a_write_from_a_second_store_on_the_same_file_forces_a_rebuild(tmp_path: Path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 's.db'}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as one, Memory.open(settings) as two:
        first = (await one.remember("I live in Osaka", workspace="g1", user="u1")).memory
        assert (await one.recall("Osaka", workspace="g1", user="u1"))[0].memory.id == first.id
        store = one.store
        assert isinstance(store, SqliteStore)
        built = _entries(store)

        added = (await two.remember("My cat is called Tama", workspace="g1", user="u1")).memory
        hits = await one.recall("cat Tama", workspace="g1", user="u1")
        assert hits[0].memory.id == added.id
        rebuilt = _entries(store)
        assert all(rebuilt[k] is not built[k] for k in built)  # a foreign write: rebuilt

        await two.memories.delete("g1", "u1", added.id)
        assert added.id not in {h.memory.id for h in await one.recall("cat Tama", workspace="g1", user="u1")}

        # and the rebuilt cache keeps taking this process's own writes in place
        again = _entries(store)
        dog = (await one.remember("My dog is called Pochi", workspace="g1", user="u1")).memory
        assert (await one.recall("dog Pochi", workspace="g1", user="u1"))[0].memory.id == dog.id
        assert _entries(store) == again


def test_lexical_index_after_puts_and_removes_scores_like_a_fresh_build():
    rng = random.Random(3)
    docs = {i: " ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for i in range(1, 300)}
    index = mops.LexicalIndex(sorted(docs.items()), generation=0)
    next_id = 300
    for _ in range(3000):  # enough to compact several times (delta and dead rows)
        if rng.random() < 0.5:
            docs[next_id] = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
            index.put(next_id, docs[next_id])
            next_id += 1
        elif rng.random() < 0.5 and docs:
            victim = rng.choice(list(docs))
            docs[victim] = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
            index.put(victim, docs[victim])
        elif docs:
            victim = rng.choice(list(docs))
            del docs[victim]
            index.remove(victim)
    fresh = mops.LexicalIndex(sorted(docs.items()), generation=0)
    for query in (["cat"], ["osaka", "tokyo"], WORDS, ["nothing"]):
        got_ids, got = index.scores(query)
        want_ids, want = fresh.scores(query)
        assert dict(zip(got_ids.tolist(), np.round(got, 4).tolist(), strict=True)) == dict(
            zip(want_ids.tolist(), np.round(want, 4).tolist(), strict=True)
        )


def test_vector_index_put_replace_remove_matches_a_fresh_build():
    rng = np.random.default_rng(5)
    vectors = {i: rng.standard_normal(16).astype(np.float32) for i in range(1, 50)}

    def build(items: dict[int, np.ndarray]) -> mops.VectorIndex:
        ids = np.array(sorted(items), dtype=np.int64)
        matrix = np.stack([items[i] / np.linalg.norm(items[i]) for i in sorted(items)]).astype(np.float32)
        return mops.VectorIndex(ids, matrix, generation=0)

    index = build(vectors)
    for step in range(500):  # grows past its capacity, replaces and removes
        key = int(rng.integers(1, 400))
        if step % 3 == 2 and key in vectors:
            del vectors[key]
            index.remove(key)
        else:
            vectors[key] = rng.standard_normal(16).astype(np.float32)
            assert index.put(key, vectors[key])
    assert not index.put(1, np.ones(8, dtype=np.float32))  # another size is refused (rebuild instead)
    query = rng.standard_normal(16).astype(np.float32)
    got_ids, got = index.scores(query)
    want_ids, want = build(vectors).scores(query)
    assert dict(zip(got_ids.tolist(), np.round(got, 5).tolist(), strict=True)) == dict(
        zip(want_ids.tolist(), np.round(want, 5).tolist(), strict=True)
    )
