"""Offline answers as a newcomer first sees them (issue 14 §4): the shipped sample export in a
real SQLite file, the extractive chat model, the hashing embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from omoide import Memory
from omoide.sample_data import discord_export_paths, questions, sample_guild
from omoide.settings import Settings

GUILD = sample_guild()[0]


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sample") / "sample.db"


@pytest.fixture
async def sample(sample_db: Path, tmp_path: Path) -> AsyncIterator[Memory]:
    settings = Settings(database_url=f"sqlite:///{sample_db}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        if not (await mem.knowledge_status()).chunks:
            await mem.import_export(discord_export_paths())
            while (await mem.embed()).chunks:
                pass
        yield mem


def quotes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


async def test_the_demo_why_question_quotes_the_cause_not_the_bug_report(sample: Memory) -> None:
    answer = await sample.ask("日本語で検索すると0件になるバグの原因は？", workspace=GUILD, language="ja")
    first = quotes(answer.text)[0]
    assert "空白でしか単語を分割していない" in first, answer.text
    assert "バグを見つけました" not in first


async def test_the_sample_questions_are_answered_by_the_first_quote(sample: Memory) -> None:
    # measured with the hashing embedder: 12 of 15 (before the answer cues: 8 of 15)
    answered: list[str] = []
    for q in questions():
        answer = await sample.ask(q.question, workspace=GUILD, language="en" if q.lang == "en" else "ja")
        if q.expect in quotes(answer.text)[0]:
            answered.append(q.id)
    assert len(answered) >= 12, answered
    for qid in ("q02", "q03", "q04", "q05", "q09", "q12", "q13", "q15"):  # why/when/how much, both languages
        assert qid in answered
