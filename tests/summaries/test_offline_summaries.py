"""Offline summaries (issue 14 §4): the extractive model's short-term and long-term summaries
are clean bullet lists of what was said — no prompt headings, no nested quotes, however
many merges — on a real store, in Japanese and English."""

from __future__ import annotations

import asyncio
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omoide import Memory
from omoide.cli import app
from omoide.models import Message
from omoide.sample_data import discord_export_paths
from omoide.settings import Settings
from omoide.stores.summaries import SummaryKind, SummaryScope

SAID = {
    "ja": [
        "来週の勉強会は木曜19時から渋谷の会議室で開きます。",
        "発表は pgvector の HNSW インデックスについてです。",
        "資料は前日までに Slack のチャンネルに共有してください。",
        "懇親会の予算は一人3,000円で、場所は駅前の居酒屋です。",
        "勉強会の参加者は12名になりました。",
        "会議室の Wi-Fi パスワードは受付で聞いてください。",
        "次回の発表者は Kenji さんに決まりました。",
        "録画はあとで YouTube に限定公開で上げます。",
    ],
    "en": [
        "The study group meets next Thursday at 7 pm in the Shibuya meeting room.",
        "The talk covers HNSW indexes in pgvector and their tuning.",
        "Please share your slides in the Slack channel a day before the meetup.",
        "The dinner budget is 3,000 yen per person at the izakaya near the station.",
        "Twelve people have signed up for the study group so far.",
        "Ask the front desk for the meeting room Wi-Fi password.",
        "Kenji will give the talk at the next meetup in December.",
        "The recording will be uploaded to YouTube as an unlisted video.",
    ],
}
SUMMARY_PROMPT = re.compile(
    r"## (?:新しい短期要約|これまでの|New short-term|Previous|#c1)|\[20\d\d-\d\d-\d\d \d\d:\d\d\]|（なし）|\(none\)"
)
PROMPT_WORDS = re.compile(
    r"##|短期要約|長期要約|ワークスペース要約|short-term summary|long-term summary|workspace summary|（なし）|\(none\)"
)


def bullets(content: str) -> list[str]:
    lines = content.splitlines()
    assert lines[0] in ("（抽出モード: LLM なし）", "(extractive mode: no LLM)")
    assert lines[1] in ("要点（原文からの抜粋）:", "Key points (quoted from the source):")
    return lines[2:]


def assert_clean(content: str, said: list[str]) -> None:
    assert not PROMPT_WORDS.search(content), content
    for line in bullets(content):
        m = re.fullmatch(r"- (?:(?P<who>\w+): )?(?:「(?P<ja>[^「」]+)」|“(?P<en>[^“”]+)”)", line)
        assert m, f"not one flat quoted bullet: {line!r}"
        sentence = m.group("ja") or m.group("en")
        assert sentence in said, f"not a sentence of the conversation: {sentence!r}"


@pytest.mark.parametrize("language", ["ja", "en"])
async def test_repeated_merges_stay_flat_bullet_lists_of_what_was_said(settings: Any, language: str) -> None:
    s = settings.model_copy(
        update={
            "embedder": "hashing",
            "answer_language": language,
            "summary_idle_seconds": 1,
            "summary_message_threshold": 1,
        }
    )
    said = SAID[language]
    async with Memory.open(s) as mem:
        key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
        generator = mem.summary_generator()
        for round_no, text in enumerate(said):  # eight passes: each adds a message and merges again
            await mem.append(key, Message.user(text, author_id="u1", author_name="alice"))
            if round_no >= 1:
                report = await generator.run()
                assert "channel:c1" in report.updated
        store = mem.store
        short = await store.summaries.latest_summary("g1", SummaryScope.CHANNEL, "c1", SummaryKind.SHORT_TERM)
        long = await store.summaries.latest_summary("g1", SummaryScope.CHANNEL, "c1", SummaryKind.LONG_TERM)
        workspace = await store.summaries.latest_summary("g1", SummaryScope.WORKSPACE, "g1", SummaryKind.LONG_TERM)
        assert short and long and workspace
        for summary in (short, long, workspace):
            assert_clean(summary.content, said)
            assert 2 <= len(bullets(summary.content)) <= 10
            assert "alice: " in summary.content  # the speaker, once, not a transcript line
        assert ("（抽出モード" in long.content) == (language == "ja")

        built = await mem.build_context(key, query=said[0], budget_tokens=8_000)
        system = built.system or ""
        assert "要点（原文からの抜粋）" in system or "Key points" in system  # the summaries are in it
        assert not SUMMARY_PROMPT.search(system), system  # none of the summary prompts' own text
        assert "「- " not in system and "“- " not in system


# ---- the help example works on the demo data: its export is imported history


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``omoide demo`` leaves behind: the sample export imported (and embedded) in SQLite."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"

    async def load() -> None:
        settings = Settings(database_url=f"sqlite:///{path}", embedder="hashing", transcripts_dir=path.parent)
        async with Memory.open(settings) as mem:
            await mem.knowledge.import_export(discord_export_paths())

    asyncio.run(load())
    return path


def test_the_summaries_show_help_example_prints_a_summary_on_the_demo_data(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from omoide.cli.summaries import DEMO_EXAMPLE

    db = tmp_path / "demo.db"
    db.write_bytes(demo_db.read_bytes())

    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    runner = CliRunner()
    help_text = " ".join(runner.invoke(app, ["summaries", "show", "--help"]).stdout.split())
    assert " ".join(DEMO_EXAMPLE.split()) in help_text
    commands = DEMO_EXAMPLE.removeprefix("Example: ").split("   (")[0].split(" && ")
    outputs = []
    for command in commands:  # run exactly what the help says, on the demo database
        argv = shlex.split(command)
        assert argv[0] == "omoide"
        result = runner.invoke(app, [*argv[1:], "--db", f"sqlite:///{db}"])
        assert result.exit_code == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    shown = outputs[-1]
    assert "short_term · channel 1290479547187331073" in shown and "long_term · channel" in shown
    assert "No summary" not in shown
    assert re.search(r"- \S+: 「", shown)  # bullets of what was said in #dev
    assert not SUMMARY_PROMPT.search(shown) and "「- " not in shown


async def test_summarise_imported_reads_each_channel_and_thread_once_and_since(demo_db: Path, tmp_path: Path) -> None:
    from omoide.summaries.imported import summarise_imported

    copy = tmp_path / "copy.db"
    copy.write_bytes(demo_db.read_bytes())
    settings = Settings(database_url=f"sqlite:///{copy}", embedder="hashing", transcripts_dir=tmp_path)
    async with Memory.open(settings) as mem:
        generator, store = mem.summary_generator(), mem.store.knowledge
        everything = await summarise_imported(generator, store)
        assert everything.messages == 336  # the export's messages, each once despite the chunks' overlap
        assert len([s for s in everything.scopes if s.startswith("channel:")]) == 4
        assert [s for s in everything.scopes if s.startswith("thread:")] == ["thread:1429801575383171072"]
        assert everything.workspaces == 1
        later = await summarise_imported(
            generator, store, workspace="1290478288896131072", since=datetime(2025, 11, 10, tzinfo=UTC)
        )
        assert 0 < later.messages < 336
        dev = await generator.store.summary_history(
            "1290478288896131072", SummaryScope.CHANNEL, "1290479547187331073", SummaryKind.SHORT_TERM
        )
        assert len(dev) == 2 and dev[0].source_message_count < dev[1].source_message_count
        for summary in dev:
            assert not SUMMARY_PROMPT.search(summary.content) and "「- " not in summary.content
        assert await summarise_imported(generator, store, workspace="nothing-here") == type(everything)()
