"""The offline extractive "no LLM" chat model."""

from __future__ import annotations

import re

import pytest

from omoide.errors import InvalidInput
from omoide.models import Message, ToolResultBlock
from omoide.providers.base import ChatModel, StreamDone, TextDelta, ToolSpec
from omoide.providers.local._prompt import find_question, parse_request, split_evidence
from omoide.providers.local.extractive import LABEL_EN, LABEL_JA, ExtractiveChatModel
from omoide.providers.local.hashing import HashingEmbedder
from omoide.providers.tokens import get_token_counter

JA_PROMPT = """以下の根拠だけを使って答えてください。

[#1] (2023-05-08 · andy) 俺はandy、大阪でエンジニアをしてる。趣味は釣り。
[#2] (2023-05-09 · mika) 昨日は雨だったので家で映画を見ました。
[#3] (2023-05-10 · andy) 来週、京都に旅行に行く予定！

質問: andyの仕事は？"""

EN_EVIDENCE = """[#1] (8 May 2023 · Caroline) I went to the LGBTQ support group yesterday. It was so powerful.
[#2] (8 May 2023 · Melanie) I painted a sunrise last year. The kids loved it.
[#3] (9 May 2023 · Caroline) I'm thinking about studying counseling."""

CONVERSATION = """[#1] Caroline: I went to the LGBTQ support group yesterday. It was so powerful. Hi!
[#2] Melanie: I painted a sunrise last year. The kids loved it. Painting helps me relax after work.
[#3] Caroline: I'm thinking about studying counseling. I want to help trans people like me.
[#4] Melanie: That's great! You would be a great counselor. My kids say hi.
[#5] Caroline: Thanks! The support group meets every Tuesday evening."""


@pytest.fixture(scope="module")
def model() -> ExtractiveChatModel:
    return ExtractiveChatModel()


def test_is_a_chat_model(model: ExtractiveChatModel) -> None:
    assert isinstance(model, ChatModel)
    assert model.provider == "extractive"
    assert isinstance(model.embedder, HashingEmbedder)


async def test_answers_in_japanese_with_citation_and_label(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(JA_PROMPT)])
    lines = r.text.split("\n")
    assert lines[0] == LABEL_JA == "（抽出モード: LLM なし）"
    assert "エンジニア" in r.text
    assert re.search(r"「俺はandy、大阪でエンジニアをしてる。」 \[#1\]", r.text)
    assert "(2023-05-08 · andy)" in r.text
    assert r.stop_reason == "end_turn"
    assert r.tool_calls == ()
    assert r.model == "extractive-v1"


async def test_answers_in_english_quoting_the_best_sentence(model: ExtractiveChatModel) -> None:
    prompt = f"Answer from the evidence.\n\n{EN_EVIDENCE}\n\nWhen did Caroline go to the LGBTQ support group?"
    r = await model.complete([Message.user(prompt)])
    lines = r.text.split("\n")
    assert lines[0] == LABEL_EN == "(extractive mode: no LLM)"
    assert lines[2] == "- (8 May 2023 · Caroline) “I went to the LGBTQ support group yesterday.” [#1]"
    assert "sunrise" not in r.text


async def test_every_quote_is_copied_from_the_evidence(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(f"{EN_EVIDENCE}\n\nQuestion: what did Melanie paint?")])
    quotes = re.findall(r"“(.+?)” \[#(\d)\]", r.text)
    assert quotes
    blocks = {e.number: e.text for e in split_evidence(EN_EVIDENCE)[0]}
    for sentence, number in quotes:
        assert sentence in blocks[int(number)]
    assert quotes[0] == ("I painted a sunrise last year.", "2")


async def test_evidence_in_system_prompt_and_tool_results(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user("Who painted a sunrise?")], system=f"Use this:\n\n{EN_EVIDENCE}")
    assert "[#2]" in r.text
    tool_turn = Message("user", (ToolResultBlock("toolu_1", "[#7] 誕生日は3月15日です。"),))
    r = await model.complete([Message.user("誕生日はいつ？"), tool_turn])
    assert "「誕生日は3月15日です。」 [#7]" in r.text


async def test_no_evidence_says_so(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user("こんにちは")])
    assert r.text.startswith(LABEL_JA)
    assert "根拠となる記録が見つからない" in r.text
    r = await model.complete([Message.user("Who is Andy?")])
    assert r.text.startswith(LABEL_EN)
    assert "No evidence" in r.text


async def test_no_overlap_is_flagged(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(f"{EN_EVIDENCE}\n\nQuestion: quantum chromodynamics?")])
    assert "no direct answer" in r.text


async def test_summarises_evidence_with_mmr(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(f"Summarise the conversation.\n\n{CONVERSATION}")], max_tokens=300)
    lines = r.text.split("\n")
    assert lines[0] == LABEL_EN
    quotes = [ln for ln in lines[2:] if ln.startswith("- ")]
    assert 2 <= len(quotes) <= 5  # a third of 14 sentences
    assert all(re.search(r"\[#\d\]$", q) for q in quotes)
    assert "Hi!" not in r.text  # too short to be a point
    # picked sentences are printed in their original order
    numbers = [int(m) for m in re.findall(r"\[#(\d)\]", r.text)]
    assert numbers == sorted(numbers)


async def test_summary_respects_the_token_budget(model: ExtractiveChatModel) -> None:
    counter = get_token_counter()
    sizes = []
    for budget in (60, 90, 120, 400):
        r = await model.complete([Message.user(f"要約して\n\n{CONVERSATION}")], max_tokens=budget)
        assert counter.count(r.text) <= budget
        assert r.text.startswith(LABEL_JA)
        assert r.stop_reason == "end_turn"
        assert r.usage.output_tokens == counter.count(r.text)
        sizes.append(r.text.count("\n- "))
    assert sizes == sorted(sizes)
    assert sizes[0] >= 1


async def test_tiny_budget_is_cut_with_max_tokens(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(f"Summarise.\n\n{CONVERSATION}")], max_tokens=5)
    assert r.stop_reason == "max_tokens"
    assert get_token_counter().count(r.text) <= 5


async def test_summarises_the_conversation_history(model: ExtractiveChatModel) -> None:
    history = [
        Message.user("昨日は京都に行って、金閣寺を見ました。とても綺麗でした。", author_name="andy"),
        Message.assistant("いいですね！写真は撮りましたか？"),
        Message.user("撮りました。あと抹茶パフェも食べました。", author_name="andy"),
        Message.user("ここまでの会話を要約して"),
    ]
    r = await model.complete(history)
    assert r.text.startswith(LABEL_JA + "\n要点")
    assert "andy: 「" in r.text
    assert "要約して" not in r.text.split("\n", 2)[2]


async def test_summary_request_in_system_prompt(model: ExtractiveChatModel) -> None:
    r = await model.complete([Message.user(CONVERSATION)], system="Write a short summary of the channel.")
    assert "Key points" in r.text


async def test_stream_yields_lines_then_done(model: ExtractiveChatModel) -> None:
    events = [e async for e in model.stream([Message.user(JA_PROMPT)])]
    assert isinstance(events[-1], StreamDone)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == events[-1].response.text
    assert deltas[0] == LABEL_JA + "\n"


async def test_a_prompt_with_evidence_calls_no_tool_and_usage_is_counted(model: ExtractiveChatModel) -> None:
    tool = ToolSpec("recall", "search memories", {"type": "object"})
    messages = [Message.user(JA_PROMPT)]
    r = await model.complete(messages, tools=[tool])
    assert r.stop_reason == "end_turn" and not r.tool_calls
    assert r.usage.input_tokens == get_token_counter().count_messages(messages, tools=[tool])


async def test_works_with_another_embedder() -> None:
    model = ExtractiveChatModel(HashingEmbedder(64))
    r = await model.complete([Message.user(JA_PROMPT)])
    assert "[#1]" in r.text


async def test_bad_calls_are_typed_errors(model: ExtractiveChatModel) -> None:
    with pytest.raises(InvalidInput, match="at least one message"):
        await model.complete([])
    with pytest.raises(InvalidInput, match="max_tokens"):
        await model.complete([Message.user("hi")], max_tokens=0)


def test_prompt_conventions() -> None:
    blocks, rest = split_evidence("intro\n\n[#1] (meta) first\ncontinued\n[#2] second\n\nQuestion: why?")
    assert [(b.number, b.meta, b.text) for b in blocks] == [(1, "(meta)", "first\ncontinued"), (2, None, "second")]
    assert "Question: why?" in rest and "first" not in rest
    assert find_question("Some context.\n\nWho is Andy?\n\nAnswer briefly.") == "Who is Andy?"
    assert find_question("質問：andyって誰？") == "andyって誰？"
    # the noun "summary" alone does not make a summarise request; a labelled question wins
    req = parse_request([Message.user("Question: what happened?")], "Use the channel summary below.")
    assert req.mode == "answer"
    req = parse_request([Message.user("Please summarise this.\n\nQuestion: what happened?")], None)
    assert req.mode == "answer"
    assert parse_request([Message.user("まとめてください\n\n[#1] a")], None).mode == "summarise"
    assert parse_request([Message.user("[#1] only evidence")], None).mode == "summarise"


async def test_a_plain_chat_question_quotes_the_conversation_so_far():
    from omoide.models import Message
    from omoide.providers.local.extractive import ExtractiveChatModel

    model = ExtractiveChatModel()
    history = [
        Message.user("私の名前はタロウです。ラーメンが大好きです。", author_name="タロウ"),
        Message.assistant(
            "（抽出モード: LLM なし）\n- 「私の名前はタロウです。」"
        ),  # its own earlier output is never quoted
        Message.user("明日は京都で釣りをします。", author_name="タロウ"),
        Message.user("私が大好きなものは何ですか？", author_name="タロウ"),
    ]
    answer = (await model.complete(history)).text
    assert answer.startswith("（抽出モード: LLM なし）")
    assert "これまでの会話から該当する発言" in answer
    assert "ラーメンが大好きです" in answer
    assert answer.count("抽出モード") == 1


# ---- answers, not restatements (issue 14 §4): the sentence that answers beats the one that asks


@pytest.mark.parametrize(
    ("evidence", "question", "answer"),
    [
        (
            "[#1] (Ana) The nightly backup failed again last night.\n"
            "[#2] (Ben) Can someone check why the nightly backup failed?\n"
            "[#3] (Ben) It failed because the disk on the backup server was full.",
            "Why did the nightly backup fail?",
            "because the disk",
        ),
        (
            "[#1] (あおい) 次の定例会議はいつですか？\n"
            "[#2] (はるか) 定例会議の議事録を共有しました。\n"
            "[#3] (はるか) 次の定例会議は12月3日(水) 15:00 からです。",
            "次の定例会議はいつ？",
            "12月3日",
        ),
        (
            "[#1] (Sam) We talked about the conference tickets today.\n"
            "[#2] (Lee) What do the conference tickets cost this year?\n"
            "[#3] (Sam) Tickets cost $120 per person, lunch included.",
            "How much do the conference tickets cost?",
            "$120",
        ),
        (
            "[#1] (けんじ) 忘年会の場所、どこにしますか？\n"
            "[#2] (ゆい) 忘年会の参加者を募集しています。\n"
            "[#3] (ゆい) 忘年会は新宿駅の近くの居酒屋「かもめ」でやります。",
            "忘年会の場所は？",
            "新宿駅",
        ),
        (
            "[#1] (Mia) Login keeps failing for some users.\n"
            "[#2] (Raj) Found the cause. Sessions expired after one minute due to a typo in the config.",
            "What is the cause of the login failures?",
            "due to a typo",
        ),
        (
            "[#1] (だいち) ログインできない不具合が出ています。\n"
            "[#2] (そら) 理由がわかりました。セッションの有効期限が1分に設定されていたためです。",
            "ログインできない不具合の理由は？",
            "有効期限",
        ),
        (
            "[#1] (Emily) Who will write the release notes for v2?\n"
            "[#2] (Marco) The release notes for v2 are due on Friday.\n"
            "[#3] (Kenji) I'll write the release notes, I'm in charge of the docs anyway.",
            "Who writes the release notes for v2?",
            "I'll write",
        ),
    ],
    ids=["why-en", "when-ja", "how-much-en", "where-ja", "cause-en", "reason-ja", "who-en"],
)
async def test_quotes_the_sentence_that_answers_first(
    model: ExtractiveChatModel, evidence: str, question: str, answer: str
) -> None:
    r = await model.complete([Message.user(f"{evidence}\n\nQuestion: {question}")])
    first_quote = r.text.split("\n")[2]
    assert answer in first_quote, r.text


async def test_a_short_lead_in_is_quoted_with_the_sentence_it_announces(model: ExtractiveChatModel) -> None:
    evidence = (
        "[#1] (Kenji) 原因わかりました。トークナイザが空白でしか単語を分割していないので、日本語が1トークンになります。"
    )
    r = await model.complete([Message.user(f"{evidence}\n\n質問: 検索が0件になる原因は？")])
    assert (
        "「原因わかりました。トークナイザが空白でしか単語を分割していないので、日本語が1トークンになります。」"
        in r.text
    )


async def test_a_summary_merge_reads_sentences_not_prompt_headings_or_earlier_quotes(
    model: ExtractiveChatModel,
) -> None:
    from omoide.providers.local.extractive import summary_lines

    garbled = "- 「- 「- 「[2026-11-25 22:22] u1: 資料は前日までに Slack に共有してください。」」」"
    assert summary_lines(garbled) == [("u1", "資料は前日までに Slack に共有してください。")]
    assert summary_lines("## 新しい短期要約\n（なし）\n(summary of the earlier part)\n要点（原文からの抜粋）:") == []
    merge = (
        "これまでの長期要約と新しい短期要約を統合し、channel: c1 の長期要約を更新してください。\n\n"
        "## これまでの長期要約\n（抽出モード: LLM なし）\n要点（原文からの抜粋）:\n"
        "- alice: 「来週の勉強会は木曜19時から渋谷の会議室で開きます。」\n- 「懇親会の予算は一人3,000円です。」\n\n"
        "## 新しい短期要約\n（抽出モード: LLM なし）\n要点（原文からの抜粋）:\n"
        "- alice: 「来週の勉強会は木曜19時から渋谷の会議室で開きます。」\n- bob: 「発表は pgvector の HNSW についてです。」"
    )
    r = await model.complete([Message.user(merge)])
    lines = r.text.splitlines()
    assert lines[:2] == ["（抽出モード: LLM なし）", "要点（原文からの抜粋）:"]
    assert all(re.fullmatch(r"- (?:\w+: )?「[^「」#]+」", line) for line in lines[2:]), r.text
    assert sum("勉強会" in line for line in lines) <= 1  # a sentence in both summaries is quoted once


async def test_a_transcript_that_says_summarise_is_summarised_not_taken_for_the_instruction(
    model: ExtractiveChatModel,
) -> None:
    prompt = (
        "次の会話（channel: c1）を、後で思い出せるように箇条書きで要約してください。\n\n"
        "[2025-10-07 12:15] Kenji: 議事録はあとで私がまとめて共有します。\n"
        "[2025-10-07 12:16] Emily: The release moves to Tuesday October 28 because of a regression.\n"
        "[2025-10-07 12:17] はるか: 次回の定例は木曜の19時から渋谷の会議室でやります。"
    )
    r = await model.complete([Message.user(prompt)])
    assert "要約する内容がありません" not in r.text
    assert "Kenji: 「議事録はあとで私がまとめて共有します。」" in r.text or "はるか: 「次回の定例" in r.text
