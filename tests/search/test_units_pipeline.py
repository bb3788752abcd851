"""Retrieval units in search (issue 16): :func:`~omoide.search.units.score_units` on its own, then
``Memory.search`` end to end — hits are messages (``unit="turn"``) cited by their chunk, whole
chunks when units are off or not built yet, and every filter still holds.

Offline: the ``hashing`` embedder, small data. The shipped weights are refitted now and then, so
the scorer's tests bring their own weights; the end-to-end tests only assume that a message
matching the query on every signal ranks first.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide import Memory, Message
from omoide.knowledge.chunking import Chunker, ChunkingOptions
from omoide.providers.local.hashing import HashingEmbedder
from omoide.search import units as unit_scorer
from omoide.search.results import SearchHit
from omoide.search.units import (
    FEATURES,
    ChunkCandidate,
    ScoredUnit,
    UnitWeights,
    score_units,
    shipped_weights,
)
from omoide.settings import Settings
from omoide.stores.knowledge import ChunkDraft, ChunkId, SourceId
from omoide.stores.search import ChunkHit, SearchFilters
from omoide.stores.units import ChunkUnits, chunk_lines, unit_embedding_texts
from omoide.text import get_search_tokenizer
from omoide.text.stopwords import drop_stopwords

from .helpers import tuned

T0 = datetime(2026, 1, 19, 10, 0, tzinfo=UTC)
EMBEDDER = HashingEmbedder(384)  # the "hashing" spec's

# (author id, name, text): a conversation where one line answers each question
CHAT: list[tuple[str, str, str]] = [
    ("u1", "Caroline", "I went to the LGBTQ support group yesterday."),
    ("u2", "Melanie", "That sounds great, how did it go?"),
    ("u1", "Caroline", "It was inspiring, I want to study counseling now."),
    ("u2", "Melanie", "I painted a sunset over the lake with my kids."),
    ("u1", "Caroline", "Your paintings are always so calm."),
    ("u2", "Melanie", "Thanks! I also started a pottery class on Tuesdays."),
]


# ----------------------------------------------------------------------------- helpers


def message(i: int, author: str, name: str, text: str) -> Message:
    """A stored-looking message (``id`` set, so its line records carry it)."""
    m = Message.user(text, author_id=author, author_name=name, created_at=T0 + timedelta(minutes=i))
    return dataclasses.replace(m, id=i + 1)


def drafts_of(chat: Sequence[tuple[str, str, str]], *, window: int = 10, overlap: int = 0) -> list[ChunkDraft]:
    messages = [message(i, *row) for i, row in enumerate(chat)]
    return Chunker(ChunkingOptions(messages=window, overlap=overlap)).chunk(messages)


def candidates_of(drafts: Sequence[ChunkDraft], *, source: int = 1) -> list[ChunkCandidate]:
    """The drafts as a fused chunk ranking in their order (chunk ids 1, 2, …; ranked 1, 2, … in both lists)."""
    out = []
    for i, d in enumerate(drafts):
        hit = ChunkHit(
            chunk_id=ChunkId(i + 1),
            source_id=SourceId(source),
            score=0.0,
            rank=0,
            content=d.content,
            location=d.location,
            channel_id="c1",
            thread_id=None,
            author_ids=tuple(d.author_ids),
            started_at=d.started_at,
            ended_at=d.ended_at,
            source_type="discord_session",
            source_title="s",
            source_uri=None,
        )
        out.append(ChunkCandidate(hit, i, i + 1, i + 1))
    return out


def units_of(candidates: Sequence[ChunkCandidate], drafts: Sequence[ChunkDraft]) -> dict[int, ChunkUnits]:
    """What ``fetch_units`` returns for the drafts once written and embedded."""
    out: dict[int, ChunkUnits] = {}
    for cand, d in zip(candidates, drafts, strict=True):
        lines = chunk_lines(d.content, d.location)
        vectors = None if lines is None else np.stack([EMBEDDER.embed_sync(t) for t in unit_embedding_texts(lines)])
        out[int(cand.chunk.chunk_id)] = ChunkUnits(d.unit_lexical, vectors)
    return out


def score(
    query: str,
    candidates: Sequence[ChunkCandidate],
    units: dict[int, ChunkUnits],
    weights: UnitWeights,
    *,
    vectors: bool = True,
) -> list[ScoredUnit]:
    """``score_units`` with the query read as the pipeline reads it."""
    tokens = drop_stopwords(get_search_tokenizer().tokenize(query))
    vector = np.asarray(EMBEDDER.embed_sync(query), dtype=np.float32) if vectors else None
    return score_units(query, tokens, vector, candidates, units, weights)


def feature(scored: Sequence[ScoredUnit], name: str) -> dict[Any, float]:
    """``name`` of each unit, by message id."""
    return {u.message_id: u.features[name] for u in scored if u.line is not None}


ALL = UnitWeights(dict.fromkeys(FEATURES, 1.0))


# ----------------------------------------------------------------------------- score_units


@pytest.mark.parametrize("vectors", [True, False], ids=["hybrid", "lexical"])
def test_every_feature_is_finite_with_or_without_vectors(vectors: bool) -> None:
    drafts = drafts_of(CHAT, window=4, overlap=1)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    del units[int(cands[-1].chunk.chunk_id)]  # a chunk without units among them
    for query in ("When did Caroline go to the support group?", "the", "ラーメン", "zzz qqq"):
        scored = score(query, cands, units, ALL, vectors=vectors)
        assert scored, query
        for u in scored:
            assert set(u.features) == set(FEATURES)
            assert all(math.isfinite(v) for v in u.features.values()), (query, u.features)
            assert math.isfinite(u.score)
    assert score("anything", [], {}, ALL) == []


def test_speaker_fires_for_a_named_speaker() -> None:
    drafts = drafts_of(CHAT)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    caroline = {i + 1 for i, (a, _, _) in enumerate(CHAT) if a == "u1"}
    got = feature(score("What did Caroline say about counseling?", cands, units, ALL), "speaker")
    assert {m for m, v in got.items() if v == 1.0} == caroline
    assert {m for m, v in got.items() if v == 0.0} == set(got) - caroline
    # case does not matter; a name inside another word is not the speaker
    assert set(feature(score("what did CAROLINE paint", cands, units, ALL), "speaker").values()) == {0.0, 1.0}
    assert set(feature(score("What did Carolines friend say?", cands, units, ALL), "speaker").values()) == {0.0}
    assert set(feature(score("Who went to the group?", cands, units, ALL), "speaker").values()) == {0.0}


def test_speaker_fires_for_japanese_names_and_honorifics() -> None:
    chat = [
        ("u1", "EY", "週末は高尾山に登りました。"),
        ("u2", "田中", "いいですね、天気はどうでしたか？"),
        ("u1", "EY", "晴れていて富士山が見えました。"),
        ("u3", "KM", "私は家でラーメンを作っていました。"),
    ]
    drafts = drafts_of(chat)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    got = feature(score("EYさんは週末に何をしましたか", cands, units, ALL), "speaker")
    assert got == {1: 1.0, 2: 0.0, 3: 1.0, 4: 0.0}
    got = feature(score("田中さんは何を聞きましたか", cands, units, ALL), "speaker")
    assert got == {1: 0.0, 2: 1.0, 3: 0.0, 4: 0.0}
    got = feature(score("「KM」はラーメンを作った？", cands, units, ALL), "speaker")
    assert got == {1: 0.0, 2: 0.0, 3: 0.0, 4: 1.0}


def test_time_cue_fires_when_a_when_question_meets_a_time_expression() -> None:
    drafts = drafts_of(CHAT)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    got = feature(score("When did Caroline go to the support group?", cands, units, ALL), "time_cue")
    assert {m for m, v in got.items() if v == 1.0} == {1}  # "yesterday"
    # not a "when" question: no cue
    got = feature(score("What did Caroline do at the support group?", cands, units, ALL), "time_cue")
    assert set(got.values()) == {0.0}


def test_time_cue_in_japanese() -> None:
    chat = [
        ("u1", "EY", "先週、高尾山に登りました。"),
        ("u2", "KM", "いいですね。山の上は寒かったですか？"),
        ("u1", "EY", "少し寒かったけど、景色がきれいでした。"),
    ]
    drafts = drafts_of(chat)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    assert feature(score("EYさんはいつ山に登りましたか", cands, units, ALL), "time_cue") == {1: 1.0, 2: 0.0, 3: 0.0}
    assert set(feature(score("EYさんはどこに登りましたか", cands, units, ALL), "time_cue").values()) == {0.0}


def test_the_parsed_chunks_it_remembers_leave_the_collector_alone() -> None:
    """The scorer remembers thousands of parsed chunks; objects the collector tracks would lengthen
    every full collection (a pause in the middle of some search), so the cache holds only what it
    stops tracking — and a remembered chunk scores as a fresh one."""
    drafts = drafts_of(CHAT, window=3)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    unit_scorer._PREPARED.clear()
    fresh = [(u.message_id, u.score) for u in score("When did Caroline go to the support group?", cands, units, ALL)]
    for _ in range(5):  # a tuple is untracked once its items are: one level of nesting per collection at worst
        gc.collect()
    remembered = [entry for entry in unit_scorer._PREPARED.values() if entry is not None]
    assert len(remembered) == len(drafts)
    assert not any(gc.is_tracked(entry) for entry in remembered)
    again = [(u.message_id, u.score) for u in score("When did Caroline go to the support group?", cands, units, ALL)]
    assert again == fresh


def test_a_message_in_two_overlapping_chunks_appears_once() -> None:
    drafts = drafts_of(CHAT, window=5, overlap=2)  # messages 1-5 and 4-6: 4 and 5 in both
    assert [d.location["message_ids"] for d in drafts] == [[1, 2, 3, 4, 5], [4, 5, 6]]
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    scored = score("counseling support group", cands, units, ALL)
    assert sorted(u.message_id for u in scored) == [1, 2, 3, 4, 5, 6]  # each once
    # the copy kept is the better one; on a tie, the earlier chunk's
    for weights, kept in ((UnitWeights({"chunk_position": 1.0}), 0), (UnitWeights({"chunk_position": -1.0}), 1)):
        scored = score("counseling", cands, units, weights)
        assert sorted(u.message_id for u in scored) == [1, 2, 3, 4, 5, 6]
        assert {u.candidate.position for u in scored if u.message_id in (4, 5)} == {kept}
    scored = score("counseling", cands, units, UnitWeights({}))
    assert {u.candidate.position for u in scored if u.message_id in (4, 5)} == {0}
    # the same message in another source is another message
    other = candidates_of(drafts[1:], source=2)
    other = [dataclasses.replace(c, chunk=dataclasses.replace(c.chunk, chunk_id=ChunkId(9)), position=1) for c in other]
    both = [cands[0], *other]
    scored = score("counseling", both, {1: units[1], 9: units[2]}, ALL)
    assert sorted(u.message_id for u in scored) == [1, 2, 3, 4, 4, 5, 5, 6]


def test_a_chunk_without_units_competes_as_one_chunk_unit() -> None:
    drafts = drafts_of(CHAT, window=3)
    document = ChunkDraft(content="A plain document about pottery classes.", lexical="plain document", token_count=8)
    cands = candidates_of([*drafts, document])
    units = units_of(cands, [*drafts, document])
    del units[2]  # the second chat chunk was written before units existed
    scored = score("pottery class", cands, units, ALL)
    wholes = [u for u in scored if u.line is None]
    assert sorted(int(u.candidate.chunk.chunk_id) for u in wholes) == [2, 3]
    assert all(u.message_id is None for u in wholes)
    assert sorted(u.message_id for u in scored if u.line is not None) == [1, 2, 3]
    # its unit features are those of the median unit
    lines = [u for u in scored if u.line is not None]
    for name in ("unit_lexical", "context_lexical", "unit_vector", "length"):
        median = float(np.median([u.features[name] for u in lines]))
        assert all(u.features[name] == pytest.approx(median) for u in wholes), name
    # tokens that do not match the chunk's lines (a stale row) are no units either
    stale = {**units, 1: ChunkUnits(units[1].lexical[:2] if units[1].lexical else None, units[1].vectors)}
    assert sum(u.line is None for u in score("pottery", cands, stale, ALL)) == 3


def test_the_order_follows_the_weights() -> None:
    drafts = drafts_of(CHAT, window=3)
    cands = candidates_of(drafts)
    units = units_of(cands, drafts)
    query = "When did Caroline go to the support group?"
    for weights in (
        ALL,
        UnitWeights({"speaker": 2.0, "length": 0.1}, bias=-1.0),
        UnitWeights({"time_cue": 1.0, "chunk_position": -3.0}),
        UnitWeights({"unit_vector": 4.0, "unit_lexical": 0.5, "chunk_lexical": 1.0}),
    ):
        scored = score(query, cands, units, weights)
        expected = [
            sum(weights.weights.get(name, 0.0) * u.features[name] for name in FEATURES) + weights.bias for u in scored
        ]
        assert [u.score for u in scored] == pytest.approx(expected)
        assert [u.score for u in scored] == sorted((u.score for u in scored), reverse=True)
    # one feature alone decides
    by_speaker = score(query, cands, units, UnitWeights({"speaker": 1.0}))
    assert [u.message_id for u in by_speaker[:3]] == [1, 3, 5]  # Caroline's; ties keep the chunk order
    by_place = score(query, cands, units, UnitWeights({"chunk_position": -1.0}))
    assert [u.message_id for u in by_place] == [4, 5, 6, 1, 2, 3]  # the second chunk first
    by_time = score(query, cands, units, UnitWeights({"time_cue": 1.0}))
    assert by_time[0].message_id == 1


def test_the_shipped_weights_name_only_known_features() -> None:
    models = shipped_weights()
    assert "default" in models
    for language, modes in models.items():
        assert "hybrid" in modes, language
        for mode, weights in modes.items():
            assert set(weights.weights) <= set(FEATURES), (language, mode)
            assert all(math.isfinite(v) for v in weights.weights.values())
            assert math.isfinite(weights.bias)


# ----------------------------------------------------------------------------- Memory end to end

KEY = "discord:g1:c=c1:u=u1"


async def archive_chat(
    mem: Memory, chat: Sequence[tuple[str, str, str]] = CHAT, *, key: str = KEY, **kw: Any
) -> list[Message]:
    """Append ``chat`` to session ``key``, archive and embed it; the stored messages."""
    stored = []
    for i, (author, name, text) in enumerate(chat):
        m = Message.user(text, author_id=author, author_name=name, created_at=T0 + timedelta(minutes=i))
        stored.append(await mem.append(key, m, **kw))
    await mem.knowledge.archive(now=True)
    await mem.knowledge.embed()
    return stored


def assert_turn(hit: SearchHit, stored: Message) -> None:
    """A turn hit for ``stored``: its id, its line, quoted from the chunk that cites it."""
    assert hit.unit == "turn"
    assert hit.message_ids == (stored.id,)
    assert hit.quote is not None and stored.text in hit.quote
    assert hit.line is not None
    lines = chunk_lines(hit.chunk.content, hit.chunk.location)
    assert lines is not None and lines[hit.line].raw == hit.quote and lines[hit.line].message_id == stored.id
    assert hit.quote in hit.chunk.content and stored.id in hit.chunk.location["message_ids"]


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "vector"])
async def test_search_returns_messages_cited_by_their_chunk(mem: Memory, mode: str) -> None:
    stored = await archive_chat(mem)
    result = await mem.search("pottery class on Tuesdays", workspace="g1", k=4, mode=mode)  # type: ignore[arg-type]
    assert not result.fallback and len(result.hits) == 4
    assert [h.rank for h in result.hits] == [1, 2, 3, 4]
    assert_turn(result.hits[0], stored[5])
    for hit in result.hits:
        assert hit.unit == "turn" and len(hit.message_ids) == 1
        assert hit.ranks is None and hit.features is None  # explain only
    assert len({h.message_ids for h in result.hits}) == 4
    data = result.hits[0].as_dict()
    assert (data["unit"], data["line"], data["message_ids"]) == ("turn", 5, [stored[5].id])
    assert data["quote"] == result.hits[0].quote and "lines" not in data["location"]

    explained = await mem.search("pottery class on Tuesdays", workspace="g1", k=4, mode=mode, explain=True)  # type: ignore[arg-type]
    assert [h.message_ids for h in explained.hits] == [h.message_ids for h in result.hits]
    top = explained.hits[0]
    assert top.ranks is not None and top.features is not None
    lists = {"hybrid": {"lexical", "vector"}, "lexical": {"lexical"}, "vector": {"vector"}}[mode]
    assert set(top.ranks) == lists | {"fused", "unit"}
    assert [h.ranks["unit"] for h in explained.hits if h.ranks] == [1, 2, 3, 4]
    assert set(top.features) == set(FEATURES) and all(math.isfinite(v) for v in top.features.values())
    if mode == "lexical":
        assert top.features["chunk_vector"] == 0.0 and top.scores.vector is None
    if mode == "vector":
        assert top.features["chunk_lexical"] == 0.0 and top.scores.lexical is None


async def test_ask_style_questions_find_the_line(mem: Memory) -> None:
    stored = await archive_chat(mem)
    result = await mem.search("When did Caroline go to the LGBTQ support group?", workspace="g1", k=3, explain=True)
    assert_turn(result.hits[0], stored[0])
    features = result.hits[0].features or {}
    assert features["speaker"] == 1.0 and features["time_cue"] == 1.0


async def test_unit_chunks_zero_returns_whole_chunks(mem: Memory) -> None:
    stored = await archive_chat(mem, CHAT * 2)  # 12 messages: two chunks (10 per chunk, overlap 2)
    async with Memory.open(tuned(mem.settings, search_unit_chunks=0)) as whole:
        result = await whole.search("pottery class", workspace="g1", k=5, explain=True)
    assert len(result.hits) == 2
    for hit in result.hits:
        assert (hit.unit, hit.line, hit.quote) == ("chunk", None, None)
        assert hit.message_ids == tuple(hit.chunk.location["message_ids"])
        assert hit.ranks is not None and "unit" not in hit.ranks and hit.features is None
    assert {i for h in result.hits for i in h.chunk.location["message_ids"]} == {m.id for m in stored}


async def test_private_messages_never_reach_another_viewer(mem: Memory) -> None:
    public = await archive_chat(mem)
    dm = "discord:g1:c=dm1:u=u1"
    secret = await archive_chat(
        mem,
        [("u1", "Caroline", "My pottery locker code is 4711."), ("bot", "Bot", "Noted, pottery code saved.")],
        key=dm,
        private=True,
    )
    secret_ids = {m.id for m in secret}
    for mode in ("hybrid", "lexical", "vector"):
        for viewer, public_only in (("u2", False), ("u9", False), (None, True)):
            result = await mem.search(
                "pottery locker code",
                workspace="g1",
                k=20,
                mode=mode,
                viewer=viewer,
                public_only=public_only,  # type: ignore[arg-type]
            )
            assert result.hits, (mode, viewer)
            shown = {i for h in result.hits for i in h.message_ids}
            assert not shown & secret_ids, (mode, viewer)
            assert all("4711" not in (h.quote or "") and "4711" not in h.content for h in result.hits)
            assert shown <= {m.id for m in public}
        mine = await mem.search("pottery locker code", workspace="g1", k=3, mode=mode, viewer="u1")  # type: ignore[arg-type]
        assert mine.hits[0].message_ids == (secret[0].id,), mode


async def test_channel_and_author_filters_hold_for_turns(mem: Memory) -> None:
    first = await archive_chat(mem)
    other = await archive_chat(
        mem,
        [("u3", "Dana", "The pottery class moved to Thursdays."), ("u1", "Caroline", "Good to know about pottery.")],
        key="discord:g1:c=c2:u=u3",
    )
    for mode in ("hybrid", "lexical", "vector"):
        in_c2 = await mem.search("pottery class", workspace="g1", k=10, mode=mode, channel="c2")  # type: ignore[arg-type]
        assert {h.chunk.channel_id for h in in_c2.hits} == {"c2"}
        assert {i for h in in_c2.hits for i in h.message_ids} == {m.id for m in other}
        in_c1 = await mem.search("pottery class", workspace="g1", k=10, mode=mode, channel="c1")  # type: ignore[arg-type]
        assert {i for h in in_c1.hits for i in h.message_ids} <= {m.id for m in first}
        by_dana = await mem.search("pottery class", workspace="g1", k=10, mode=mode, author="u3")  # type: ignore[arg-type]
        assert by_dana.hits and all("u3" in h.chunk.author_ids for h in by_dana.hits)
        assert {h.chunk.channel_id for h in by_dana.hits} == {"c2"}


async def test_the_author_filter_holds_for_each_turn(mem: Memory) -> None:
    stored = await archive_chat(mem)
    by_author = {m.id: m.author_id for m in stored}
    result = await mem.search("support group painting pottery", workspace="g1", k=10, author="u1")
    assert result.hits and all(by_author[h.message_ids[0]] == "u1" for h in result.hits if h.unit == "turn")


async def test_the_time_filter_holds_for_each_turn(mem: Memory) -> None:
    stored = await archive_chat(mem)
    since = T0 + timedelta(minutes=3)
    result = await mem.search("support group painting pottery", workspace="g1", k=10, since=since)
    when = {m.id: m.created_at for m in stored}
    assert result.hits and all(when[h.message_ids[0]] >= since for h in result.hits if h.unit == "turn")


async def test_a_chunk_hit_names_its_messages_when_units_are_off(mem: Memory) -> None:
    stored = await archive_chat(mem)
    async with Memory.open(tuned(mem.settings, search_unit_chunks=0)) as whole:
        result = await whole.search("pottery class", workspace="g1")
    assert result.hits[0].message_ids == tuple(m.id for m in stored)


# ----------------------------------------------------------------------------- before units existed


def sqlite_settings(tmp_path: Path) -> Settings:
    return Settings(
        database_url=f"sqlite:///{tmp_path / 'omoide.db'}", transcripts_dir=tmp_path / "t", embedder="hashing"
    )


async def test_chunks_without_units_are_chunk_hits_until_reindexed(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path)
    async with Memory.open(settings) as mem:
        stored = await archive_chat(mem, CHAT * 2)  # two chunks
    # as an omoide before units left them
    with sqlite3.connect(tmp_path / "omoide.db") as db:
        db.execute("UPDATE knowledge_chunks SET unit_lexical = NULL")
        db.execute("UPDATE chunk_embeddings SET unit_vectors = NULL")
    db.close()

    async with Memory.open(settings) as mem:
        status = await mem.knowledge.status()
        assert status.units_missing == 2 and status.unit_vectors_missing.get(mem.embedder.model_id) == 2
        for mode in ("hybrid", "lexical", "vector"):
            result = await mem.search("pottery class on Tuesdays", workspace="g1", k=5, mode=mode, explain=True)  # type: ignore[arg-type]
            assert len(result.hits) == 2, mode
            for hit in result.hits:
                assert (hit.unit, hit.line, hit.quote) == ("chunk", None, None)
                assert hit.ranks is not None and "unit" not in hit.ranks

        # tokens only: messages are ranked again (the vector features stand at the median)
        report = await mem.knowledge.reindex_units(vectors=False)
        assert (report.lexical, report.vectors) == (2, 0)
        lexical = await mem.search("pottery class on Tuesdays", workspace="g1", k=3)
        assert [h.unit for h in lexical.hits] == ["turn"] * 3

        report = await mem.knowledge.reindex_units()
        assert (report.lexical, report.vectors, report.units) == (0, 2, 10 + 4)
        status = await mem.knowledge.status()
        assert status.units_missing == 0 and status.unit_vectors_missing.get(mem.embedder.model_id, 0) == 0
        for mode in ("hybrid", "lexical", "vector"):
            result = await mem.search("pottery class on Tuesdays", workspace="g1", k=3, mode=mode)  # type: ignore[arg-type]
            assert [h.unit for h in result.hits] == ["turn"] * 3, mode
            assert result.hits[0].message_ids[0] in {stored[5].id, stored[11].id}


async def test_chunks_with_and_without_units_rank_together(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path)
    async with Memory.open(settings) as mem:
        old = await archive_chat(mem, [("u3", "Dana", "The pottery kiln broke last week."), ("u4", "Eli", "Oh no.")])
        new = await archive_chat(mem, key="discord:g1:c=c2:u=u1")
    with sqlite3.connect(tmp_path / "omoide.db") as db:
        (chunk,) = db.execute("SELECT id FROM knowledge_chunks WHERE channel_id = 'c1'").fetchone() or (None,)
        db.execute("UPDATE knowledge_chunks SET unit_lexical = NULL WHERE id = ?", (chunk,))
    db.close()

    async with Memory.open(settings) as mem:
        result = await mem.search("pottery kiln", workspace="g1", k=10, explain=True)
        units = [h.unit for h in result.hits]
        assert units.count("chunk") == 1 and units.count("turn") == len(new)
        (whole,) = [h for h in result.hits if h.unit == "chunk"]
        assert int(whole.chunk.chunk_id) == chunk and whole.message_ids == tuple(m.id for m in old)
        assert whole.features is not None and set(whole.features) == set(FEATURES)
        assert {i for h in result.hits if h.unit == "turn" for i in h.message_ids} == {m.id for m in new}


async def test_search_evidence_keeps_the_hits_of_the_first_chunks(mem: Memory) -> None:
    await archive_chat(mem, CHAT * 3)  # 18 messages: several overlapping chunks
    filters = SearchFilters("g1")
    one = await mem.search_pipeline().search_evidence("pottery class support group", filters, chunks=1)
    assert one.hits and len({h.chunk.chunk_id for h in one.hits}) == 1
    many = await mem.search_pipeline().search_evidence("pottery class support group", filters, chunks=2)
    chunks = [h.chunk.chunk_id for h in many.hits]
    assert len(set(chunks)) == 2 and chunks[0] == one.hits[0].chunk.chunk_id
    assert [h.rank for h in many.hits] == sorted(h.rank for h in many.hits)
