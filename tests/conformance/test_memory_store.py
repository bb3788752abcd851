"""MemoryStore conformance: the same tests on SQLite and PostgreSQL (real servers, real files)."""

from __future__ import annotations

import numpy as np
import pytest

from omoide.errors import InvalidInput, NotFoundError
from omoide.models import Message
from omoide.stores.memories import MemoryChanges, MemoryDraft, MemoryStore
from omoide.text import tokenize_for_search

MODEL = "test-model@8"


def _vec(seed: int, dims: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def _draft(content: str, *, user: str = "u1", workspace: str = "g1", category: str = "general", tags=()) -> MemoryDraft:
    return MemoryDraft(
        workspace, user, content, " ".join(tokenize_for_search(content)), category, tuple(tags), {"k": 1}
    )


async def test_store_satisfies_the_protocol(store):
    assert isinstance(store.memories, MemoryStore)


async def test_insert_get_list_update_delete(store):
    a = await store.memories.insert_memory(_draft("誕生日は3月15日", tags=["profile"]), model=MODEL, vector=_vec(1))
    b = await store.memories.insert_memory(
        _draft("好きな食べ物はラーメン", category="preference"), model=MODEL, vector=_vec(2)
    )
    assert (a.content, a.tags, a.metadata, a.category) == ("誕生日は3月15日", ("profile",), {"k": 1}, "general")
    assert await store.memories.get_memory("g1", "u1", a.id) == a
    assert [m.id for m in await store.memories.list_memories("g1", "u1")] == [b.id, a.id]  # newest first
    assert [m.id for m in await store.memories.list_memories("g1", "u1", category="preference")] == [b.id]
    assert [m.id for m in await store.memories.list_memories("g1", "u1", tags=["profile"])] == [a.id]
    assert [m.id for m in await store.memories.list_memories("g1", "u1", limit=1, offset=1)] == [a.id]

    changed = await store.memories.update_memory(
        "g1",
        "u1",
        a.id,
        MemoryChanges(content="誕生日は4月2日", lexical="誕生 日 4 月 2 日", tags=("profile", "fixed")),
    )
    assert (changed.content, changed.tags, changed.created_at) == ("誕生日は4月2日", ("profile", "fixed"), a.created_at)
    assert changed.updated_at >= a.updated_at
    # new content without a new vector: the old vector (of the old text) is gone
    assert [
        m.id for m, _ in await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=_vec(1), k=5)
    ] == [b.id]

    await store.memories.delete_memory("g1", "u1", a.id)
    assert await store.memories.get_memory("g1", "u1", a.id) is None
    with pytest.raises(NotFoundError):
        await store.memories.delete_memory("g1", "u1", a.id)


async def test_lexical_recall_weighs_rare_words_above_common_ones(store):
    """BM25 on both backends: the memory with the question's rare word comes first, not the
    ones that repeat its common word (PostgreSQL ranked by ts_rank_cd, which has no IDF)."""
    for i in range(8):
        await store.memories.insert_memory(
            _draft(f"meeting notes: the meeting room for meeting {i}"), model=MODEL, vector=_vec(i)
        )
    rare = await store.memories.insert_memory(
        _draft("my favourite ramen shop is in sapporo"), model=MODEL, vector=_vec(9)
    )
    tokens = tokenize_for_search("meeting in sapporo")
    assert (await store.memories.memory_lexical_search("g1", "u1", tokens=tokens, k=3))[0][0].id == rare.id
    hits = await store.memories.memory_recall("g1", "u1", model=MODEL, query=_vec(99), tokens=tokens, k=3, limit=3)
    assert rare.id in [h.memory.id for h in hits]


async def test_vector_and_lexical_recall(store):
    ids = []
    for i, text in enumerate(["誕生日は3月15日", "好きな食べ物はラーメン", "I live in Osaka", "妻の名前はゆき"]):
        ids.append((await store.memories.insert_memory(_draft(text), model=MODEL, vector=_vec(i))).id)
    hits = await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=_vec(2), k=2)
    assert hits[0][0].id == ids[2] and hits[0][1] == pytest.approx(1.0, abs=2e-3)  # halfvec on PostgreSQL
    assert len(hits) == 2 and hits[0][1] >= hits[1][1]
    lexical = await store.memories.memory_lexical_search("g1", "u1", tokens=tokenize_for_search("ラーメンが好き"), k=5)
    assert lexical[0][0].id == ids[1]
    assert await store.memories.memory_lexical_search("g1", "u1", tokens=["osaka"], k=5) != []
    assert await store.memories.memory_lexical_search("g1", "u1", tokens=[], k=5) == []
    with pytest.raises(InvalidInput, match="dimensions"):
        await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=_vec(1, dims=4), k=2)


async def test_recall_filters_by_category_and_every_tag(store):
    a = await store.memories.insert_memory(_draft("a", tags=["x", "y"]), model=MODEL, vector=_vec(1))
    await store.memories.insert_memory(_draft("b", tags=["x"]), model=MODEL, vector=_vec(1))
    c = await store.memories.insert_memory(_draft("c", category="schedule"), model=MODEL, vector=_vec(1))
    assert [
        m.id
        for m, _ in await store.memories.memory_vector_search(
            "g1", "u1", model=MODEL, query=_vec(1), k=5, tags=["x", "y"]
        )
    ] == [a.id]
    assert [
        m.id
        for m, _ in await store.memories.memory_vector_search(
            "g1", "u1", model=MODEL, query=_vec(1), k=5, category="schedule"
        )
    ] == [c.id]


async def test_another_users_ids_are_not_found_for_every_operation(store):
    """The isolation matrix: B (and A in another workspace) with A's id gets "not found", never A's data."""
    mine = await store.memories.insert_memory(_draft("秘密の合言葉はひまわり"), model=MODEL, vector=_vec(7))
    for workspace, user in (("g1", "u2"), ("g2", "u1")):
        assert await store.memories.get_memory(workspace, user, mine.id) is None
        with pytest.raises(NotFoundError):
            await store.memories.update_memory(workspace, user, mine.id, MemoryChanges(category="stolen"))
        with pytest.raises(NotFoundError):
            await store.memories.delete_memory(workspace, user, mine.id)
        assert await store.memories.list_memories(workspace, user) == []
        assert await store.memories.memory_vector_search(workspace, user, model=MODEL, query=_vec(7), k=5) == []
        assert await store.memories.memory_lexical_search(workspace, user, tokens=["ひまわり"], k=5) == []
        assert (await store.memories.forget_user(workspace, user)).memories == 0
    assert await store.memories.get_memory("g1", "u1", mine.id) == mine  # untouched


async def test_forget_user_erases_memories_sessions_and_their_messages(store):
    from omoide.keys import session_key

    await store.memories.insert_memory(_draft("m1"), model=MODEL, vector=_vec(1))
    await store.memories.insert_memory(_draft("other", user="u2"), model=MODEL, vector=_vec(2))
    own = await store.sessions.get_or_create_session(
        session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    )
    shared = await store.sessions.get_or_create_session(
        session_key(platform="discord", workspace="g1", channel="c1", user="u2")
    )
    for i in range(3):
        await store.sessions.append_message(own.id, Message.user(f"mine {i}", author_id="u1"))
    await store.sessions.append_message(shared.id, Message.user("u1 in u2's session", author_id="u1"))
    await store.sessions.append_message(shared.id, Message.user("u2 speaks", author_id="u2"))
    from omoide.stores.summaries import SummaryDraft, SummaryKind, SummaryScope

    def about(user: str, text: str) -> SummaryDraft:
        return SummaryDraft("g1", SummaryScope.USER, user, SummaryKind.LONG_TERM, text)

    await store.summaries.save_summary(about("u1", "u1 likes ramen"), new_version=True)
    await store.summaries.save_summary(about("u1", "u1 likes ramen and tea"), new_version=True)
    await store.summaries.save_summary(about("u2", "u2 likes tea"), new_version=True)
    report = await store.memories.forget_user("g1", "u1")
    assert (report.memories, report.sessions, report.messages, report.summaries) == (1, 1, 4, 2)
    assert report.describe() == "Erased 1 memory, 1 session, 4 messages and 2 summary versions."
    assert await store.summaries.latest_summary("g1", SummaryScope.USER, "u1", SummaryKind.LONG_TERM) is None
    assert (
        await store.summaries.latest_summary("g1", SummaryScope.USER, "u2", SummaryKind.LONG_TERM)
    ).content == "u2 likes tea"
    assert await store.memories.list_memories("g1", "u1") == []
    assert [m.content for m in await store.memories.list_memories("g1", "u2")] == ["other"]
    assert await store.sessions.get_session_by_id(own.id) is None
    assert [m.text for m in await store.sessions.messages(shared.id)] == ["u2 speaks"]


async def test_bad_input_is_refused_and_writes_nothing(store):
    with pytest.raises(InvalidInput):
        await store.memories.insert_memory(_draft(""), model=MODEL, vector=_vec(1))
    with pytest.raises(InvalidInput):
        await store.memories.insert_memory(_draft("x", user=""), model=MODEL, vector=_vec(1))
    with pytest.raises(InvalidInput, match="NaN"):
        await store.memories.insert_memory(_draft("x"), model=MODEL, vector=np.array([np.nan, 1.0], dtype=np.float32))
    with pytest.raises(InvalidInput):
        await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=_vec(1), k=0)
    with pytest.raises(InvalidInput, match="together"):
        await store.memories.update_memory("g1", "u1", 1, MemoryChanges(content="x"))
    assert await store.memories.list_memories("g1", "u1") == []


async def test_memory_recall_fuses_both_rankings_in_one_call(store):
    from omoide.stores._memory_ranking import fuse_memory_hits

    texts = ["誕生日は3月15日", "好きな食べ物はラーメン", "I live in Osaka", "妻の名前はゆき", "ラーメン屋は大阪"]
    ids = [
        (
            await store.memories.insert_memory(
                _draft(t, category="food" if "ラーメン" in t else "general"), model=MODEL, vector=_vec(i)
            )
        ).id
        for i, t in enumerate(texts)
    ]
    tokens = tokenize_for_search("大阪のラーメン")
    by_vector = await store.memories.memory_vector_search("g1", "u1", model=MODEL, query=_vec(1), k=10)
    by_text = await store.memories.memory_lexical_search("g1", "u1", tokens=tokens, k=10)
    records = {int(m.id): m for m, _ in (*by_vector, *by_text)}
    expected = fuse_memory_hits([m.id for m, _ in by_vector], [m.id for m, _ in by_text], 3, lambda _: records)
    hits = await store.memories.memory_recall("g1", "u1", model=MODEL, query=_vec(1), tokens=tokens, k=10, limit=3)
    assert hits == expected and len(hits) == 3 and [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].memory.id == ids[1] and hits[0].ranks == {"vector": 1, "lexical": hits[0].ranks["lexical"]}
    food = await store.memories.memory_recall(
        "g1", "u1", model=MODEL, query=_vec(0), tokens=tokens, k=10, limit=5, category="food"
    )
    assert {h.memory.id for h in food} == {ids[1], ids[4]}
    for workspace, user in (("g1", "u2"), ("g2", "u1")):  # isolation: another user's memories never come back
        assert (
            await store.memories.memory_recall(
                workspace, user, model=MODEL, query=_vec(1), tokens=tokens, k=10, limit=5
            )
            == []
        )
