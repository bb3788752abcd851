"""The turn-level scoring of benchmarks/locomo.py and benchmarks/ja_retrieval.py."""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import _retrieval_metrics as rm  # noqa: E402


def test_overlapping_chunks_contribute_each_turn_once_in_rank_order() -> None:
    hits = [["D1:1", "D1:2", "D1:3"], ["D1:2", "D1:3", "D1:4"], ["D2:7"]]
    assert rm.ranked_turns(hits) == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:7"]
    assert rm.ranked_turns(hits, depth=2) == ["D1:1", "D1:2"]


def test_k_counts_turns_so_a_large_chunk_cannot_inflate_recall() -> None:
    gold = {"D1:12"}
    big_chunk = [[f"D1:{i}" for i in range(1, 13)]]  # the gold turn is the 12th turn of the first hit
    ranked = rm.ranked_turns(big_chunk)
    assert rm.recall_at(ranked, gold, 10) == 0.0
    assert rm.recall_at(ranked, gold, 25) == 1.0
    small = rm.ranked_turns([["D1:12"]])
    assert rm.recall_at(small, gold, 10) == 1.0


def test_recall_is_the_fraction_of_gold_turns() -> None:
    ranked = ["a", "b", "c", "d"]
    assert rm.recall_at(ranked, {"a", "d", "z"}, 2) == pytest.approx(1 / 3)
    assert rm.recall_at(ranked, {"a", "d", "z"}, 4) == pytest.approx(2 / 3)
    assert rm.recall_at(ranked, set(), 4) == 0.0
    assert rm.hit_at(ranked, {"d"}, 3) == 0.0
    assert rm.hit_at(ranked, {"d"}, 4) == 1.0


def test_ndcg_binary_relevance() -> None:
    assert rm.ndcg_at(["g", "x"], {"g"}, 10) == pytest.approx(1.0)
    assert rm.ndcg_at(["x", "g"], {"g"}, 10) == pytest.approx(1 / math.log2(3))
    # two gold turns, one found at rank 1: dcg 1, ideal 1 + 1/log2(3)
    assert rm.ndcg_at(["g1", "x"], {"g1", "g2"}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert rm.ndcg_at(["x"], {"g"}, 10) == 0.0


def test_scoreboard_macro_averages_overall_and_per_category() -> None:
    board = rm.Scoreboard()
    board.add("1", ["a"], {"a"})
    board.add("1", ["b"], {"a"})
    board.add("2", ["a", "b"], {"a", "b"})
    s = board.summary()
    assert s["1"]["recall@10"] == pytest.approx(0.5)
    assert s["1"]["n"] == 2
    assert s["2"]["recall@10"] == pytest.approx(1.0)
    assert s["overall"]["recall@10"] == pytest.approx(2 / 3)
    assert s["overall"]["n"] == 3


def test_settings_overrides_parse_numbers_and_strings() -> None:
    assert rm.overrides_from(["chunk_messages=1", "chunk_strategy=token_based", "search_rrf_k=60"]) == {
        "chunk_messages": 1,
        "chunk_strategy": "token_based",
        "search_rrf_k": 60,
    }
    with pytest.raises(SystemExit):
        rm.overrides_from(["chunk_messages"])


def test_locomo_loader_parses_dates_evidence_and_skips_category_5(tmp_path: Path) -> None:
    import locomo

    data = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "I adopted a dog"},
                ],
            },
            "qa": [
                {"question": "What did Bo adopt?", "answer": "a dog", "evidence": ["D1:02; D9:9"], "category": 4},
                {"question": "adversarial", "evidence": ["D1:2"], "category": 5},
                {"question": "no evidence", "evidence": ["D7:1"], "category": 1},
            ],
        }
    ]
    path = tmp_path / "l.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    (conv,) = locomo.load(path)
    assert conv.workspace == "conv-x"
    assert [t.turn_id for t in conv.sessions[0].turns] == ["D1:1", "D1:2"]
    assert conv.sessions[0].turns[0].created_at.isoformat() == "2023-05-08T13:56:00+00:00"
    assert conv.sessions[0].turns[1].created_at > conv.sessions[0].turns[0].created_at
    assert [(q.category, set(q.gold)) for q in conv.questions] == [("4", {"D1:2"})]


async def test_ingest_and_search_map_chunks_back_to_turns(tmp_path: Path) -> None:
    """End to end on a real SQLite file with the hashing embedder: one turn per chunk."""
    from datetime import UTC, datetime, timedelta

    from omoide import Memory

    start = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    texts = ["I adopted a puppy named Rex", "We went hiking in the Alps", "My sister plays the violin"]
    turns = tuple(rm.Turn(f"D1:{i + 1}", "Ann", t, start + timedelta(seconds=30 * i)) for i, t in enumerate(texts))
    conv = rm.Conversation(
        "w1", (rm.Session("session_1", turns),), (rm.Question("Who plays the violin?", "4", frozenset({"D1:3"})),)
    )
    async with Memory.open(database_url=f"sqlite:///{tmp_path / 'b.db'}", chunk_messages=1, chunk_overlap=0) as mem:
        ids = await rm.ingest(mem, [conv], "locomo")
        assert sorted(ids.values()) == ["D1:1", "D1:2", "D1:3"]
        summary, extra = await rm.evaluate(mem, [conv], ids, mode="lexical", label="lexical")
    assert summary["overall"]["recall@5"] == 1.0
    assert summary["overall"]["ndcg@10"] == 1.0
    assert extra["turns_per_hit"] == 1.0


async def test_cached_embedder_returns_the_models_vectors_and_reuses_them(tmp_path: Path) -> None:
    import numpy as np

    from omoide.providers.local.hashing import HashingEmbedder

    inner = HashingEmbedder()
    cache = rm.CachedEmbedder(inner, tmp_path / "cache.sqlite")
    first = await cache.embed_documents(["alpha", "beta"])
    again = rm.CachedEmbedder(inner, tmp_path / "cache.sqlite")
    second = await again.embed_documents(["beta", "alpha", "gamma"])
    assert (again.hits, again.misses) == (2, 1)
    assert np.allclose(second[0], first[1]) and np.allclose(second[1], first[0])
    assert np.allclose(second[2], (await inner.embed_documents(["gamma"]))[0])
    assert np.allclose(await again.embed_query("q"), await inner.embed_query("q"))
    assert again.model_id == inner.model_id
    cache.close()
    again.close()


def test_longmemeval_loader_recovers_sessions_and_scores_them(tmp_path: Path) -> None:
    import longmemeval as lme

    def turn(role: str, text: str, date: str) -> dict[str, str]:
        return {"role": role, "content": text, "date": date}

    sample = {
        "data": [
            {
                "id": "multi-sessio-x1",
                "question_type": "multi-session",
                "conversation": [
                    turn("user", "I bought a bike.", "2023/05/20 (Sat) 07:34"),
                    turn("assistant", "Nice!", "2023/05/20 (Sat) 07:34"),
                    turn("user", "It was red.", "2023/05/22 (Mon) 19:05"),
                ],
                "questions": [{"id": "q1", "question": "What colour is my bike?", "answer": "red"}],
            }
        ]
    }
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    (item,) = lme.load(path)
    assert item.kind == "multi-session" and item.question == "What colour is my bike?"
    assert [s.name for s in item.sessions] == ["multi-sessio-x1#0", "multi-sessio-x1#1"]
    first = item.sessions[0].turns
    assert [role for role, _, _ in first] == ["user", "assistant"]
    assert first[0][2].isoformat() == "2023-05-20T07:34:00+00:00"
    assert (first[1][2] - first[0][2]).total_seconds() == 30

    gold = {"a", "b"}
    assert lme.session_scores(["a", "z", "b"], gold) == pytest.approx(
        {"any@1": 1.0, "any@5": 1.0, "all@5": 1.0, "ndcg@5": (1 + 1 / 2) / (1 + 1 / math.log2(3))}
    )
    assert lme.session_scores(["z", "y"], gold)["any@5"] == 0.0
    assert lme.session_scores(["z", "b"], gold)["all@5"] == 0.0


def test_one_workspace_keeps_every_conversation_apart_by_prefix() -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

    def conversation(name: str) -> rm.Conversation:
        turns = (rm.Turn("D1:1", "A", "hello", when), rm.Turn("D1:2", "B", "hi", when))
        return rm.Conversation(name, (rm.Session("session_1", turns),), (rm.Question("q", "1", frozenset({"D1:2"})),))

    (pooled,) = rm.one_workspace([conversation("conv-1"), conversation("conv-2")])
    assert pooled.workspace == rm.ONE_WORKSPACE
    assert [s.name for s in pooled.sessions] == ["conv-1/session_1", "conv-2/session_1"]
    assert [t.turn_id for s in pooled.sessions for t in s.turns] == [
        "conv-1/D1:1",
        "conv-1/D1:2",
        "conv-2/D1:1",
        "conv-2/D1:2",
    ]
    assert [set(q.gold) for q in pooled.questions] == [{"conv-1/D1:2"}, {"conv-2/D1:2"}]
    assert pooled.sessions[0].turns[0].text == "hello"
