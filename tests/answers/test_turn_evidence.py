"""Turn hits (one message of a chunk) in answers: each chunk is quoted and cited once, in order of
its first hit, its matched turns kept with the citation; the offline model quotes the right line.

The hits are built by hand (``unit="turn"``, ``line``, ``quote``), so these tests do not depend on
how the search pipeline finds turns.
"""

from __future__ import annotations

import re

from omoide.answers import Answerer, GenerationConfig, build_prompt
from omoide.answers.answerer import Citation, matched_turns
from omoide.answers.prompt import by_chunk
from omoide.api_models import AnswerOut
from omoide.providers.local.extractive import ExtractiveChatModel
from omoide.providers.scripted import ChatRequest, ScriptedChatModel
from omoide.providers.tokens import get_token_counter
from omoide.settings import Settings

from .turn_hits import FILTERS, HITS, RELEASE, RELEASE_CHUNK, WEATHER, WEATHER_CHUNK, FakePipeline, chunk, turn, whole


def test_by_chunk_keeps_first_hit_order():
    groups = by_chunk(HITS)
    assert [[h.rank for h in g] for g in groups] == [[1, 3, 4], [2]]
    assert by_chunk([]) == []


def test_prompt_quotes_each_chunk_once_in_first_hit_order():
    prompt = build_prompt("v0.4.0 のリリースが延期された理由は？", HITS, language="ja")
    assert [int(h.chunk.chunk_id) for h in prompt.evidence] == [12, 7]
    assert prompt.evidence[0] is HITS[0]  # the chunk's best hit stands for it
    assert [[h.rank for h in g] for g in prompt.matched] == [[1, 3, 4], [2]]
    assert len(re.findall(r"^\[#\d+\]", prompt.user, flags=re.MULTILINE)) == 2
    assert prompt.user.count("来週に延期します") == 1  # the chunk is quoted once, whole
    assert prompt.user.count("おはようございます") == 1  # with the context around the matched lines
    assert "[#1] (2025-11-15 13:30–13:34 UTC · mika, ren, sora) [2025-11-15 13:30] **mika**:" in prompt.user
    assert "\n\n[#2] (2025-11-15 13:30–13:31 UTC · carol, dave) [2025-11-15 13:30] **carol**:" in prompt.user
    assert [h.rank for h in prompt.hits(1)] == [1, 3, 4]  # a shorter prompt keeps whole groups


def test_whole_chunk_hits_are_unchanged():
    hits = [whole(RELEASE_CHUNK, 1), whole(WEATHER_CHUNK, 2)]
    prompt = build_prompt("天気は？", hits, language="ja")
    assert prompt.evidence == tuple(hits)
    assert matched_turns(prompt.matched[0]) == []
    assert Citation(1, hits[0]).as_dict()["matched"] == []


async def test_extractive_answer_quotes_the_matched_line_and_cites_the_chunk_once():
    answerer = Answerer(FakePipeline(HITS), ExtractiveChatModel, GenerationConfig())  # type: ignore[arg-type]
    result = await answerer.ask("v0.4.0 のリリースが延期された理由は？", FILTERS)
    assert result.model == "extractive-v1"
    assert len(result.hits) == 2 and [int(h.chunk.chunk_id) for h in result.hits] == [12, 7]
    lines = result.text.splitlines()
    assert lines[0] == "（抽出モード: LLM なし）"
    assert "CI が不安定なので v0.4.0 のリリースは来週に延期します" in lines[2] and lines[2].endswith("[#1]")
    assert "mika:" in lines[2]  # the line's header still names its speaker
    # each quoted sentence once: the chunk is one passage, not one per matched turn
    assert len(set(lines[2:])) == len(lines[2:])
    assert result.text.count("来週に延期します") == 1
    first = result.citations[0]
    assert first.number == 1 and first.hit is HITS[0]
    assert [t.line for t in first.turns] == [2, 1, 3]
    assert [c.number for c in result.citations] == sorted({c.number for c in result.citations})
    assert not any("left out" in n for n in result.notes)


async def test_answer_json_carries_matched_turns_and_validates():
    answerer = Answerer(FakePipeline(HITS), ExtractiveChatModel, GenerationConfig())  # type: ignore[arg-type]
    result = await answerer.ask("v0.4.0 のリリースが延期された理由は？", FILTERS)
    data = result.as_dict()
    out = AnswerOut.model_validate(data)
    assert [e.chunk_id for e in out.evidence] == [12, 7]
    release = out.evidence[0]
    assert release.unit == "turn" and release.line == 2 and release.message_ids == ["m3"]
    assert [(m.rank, m.line, m.message_ids) for m in release.matched] == [
        (1, 2, ["m3"]),
        (3, 1, ["m2"]),
        (4, 3, ["m4"]),
    ]
    assert (
        release.matched[0].quote == "[2025-11-15 13:32] **mika**: CI が不安定なので v0.4.0 のリリースは来週に延期します"
    )
    cited = out.citations[0]
    assert cited.number == 1 and cited.chunk_id == 12 and len(cited.matched) == 3
    assert "lines" not in cited.location  # line offsets stay internal
    assert out.model_dump(mode="json")["evidence"][1]["matched"][0]["quote"].endswith("明日の天気は晴れです")


def citing_both(request: ChatRequest) -> str:
    shown = re.findall(r"^\[#(\d+)\]", request.messages[0].text, flags=re.MULTILINE)
    return "延期 [#1]。" + " ".join(f"[#{n}]" for n in shown)


async def test_scripted_model_sees_and_cites_chunks_not_turns():
    model = ScriptedChatModel(citing_both, counter=get_token_counter())
    answerer = Answerer(FakePipeline(HITS), lambda: model, GenerationConfig())
    result = await answerer.ask("延期の理由は？", FILTERS)
    sent = model.calls[0].messages[0].text
    assert re.findall(r"^\[#(\d+)\]", sent, flags=re.MULTILINE) == ["1", "2"]
    assert [(c.number, int(c.hit.chunk.chunk_id), len(c.turns)) for c in result.citations] == [(1, 12, 3), (2, 7, 1)]


async def test_trimming_leaves_out_whole_chunks_and_counts_passages():
    counter = get_token_counter()
    hits = [*HITS, turn(chunk(3, WEATHER), 1, 5), turn(chunk(4, RELEASE), 4, 6)]
    probe = ScriptedChatModel(citing_both, counter=counter)
    await Answerer(FakePipeline(hits), lambda: probe, GenerationConfig(), counter=counter).ask(
        "延期の理由は？", FILTERS
    )
    full = probe.calls[0].prompt_tokens
    limit = full - 20  # the last passage (a five-line chunk) must go, the rest fits
    settings = Settings(context_windows={"scripted": limit + 64})
    model = ScriptedChatModel(citing_both, counter=counter, overflow_above=limit)
    answerer = Answerer(
        FakePipeline(hits), lambda: model, GenerationConfig(max_tokens=64), counter=counter, settings=settings
    )
    result = await answerer.ask("延期の理由は？", FILTERS)
    assert [int(h.chunk.chunk_id) for h in result.hits] == [12, 7, 3]
    assert [len(g) for g in result.matched] == [3, 1, 1]  # the kept chunks keep all their turns
    assert any(n.startswith("1 lowest-ranked evidence passage(s) left out") for n in result.notes), result.notes
