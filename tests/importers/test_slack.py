"""Slack workspace exports: directory and zip, threads, bots, edits, deletions, mentions, problems."""

from __future__ import annotations

import json
import tempfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omoide.importers import (
    ImportedMessage,
    ImportReport,
    MalformedExport,
    UnrecognizedExport,
    _jsonstream,
    iter_slack,
    read_export,
    slack_text,
)

USERS = [
    {
        "id": "U01ALICE",
        "team_id": "T0TEAM",
        "name": "alice",
        "real_name": "Alice Liddell",
        "profile": {"real_name": "Alice Liddell", "display_name": "alice.l"},
        "is_bot": False,
    },
    {
        "id": "U02BOB",
        "team_id": "T0TEAM",
        "name": "bob",
        "real_name": "Bob Stone",
        "profile": {"real_name": "Bob Stone", "display_name": ""},
        "is_bot": False,
    },
    {"id": "U03HAL", "team_id": "T0TEAM", "name": "hal", "profile": {"display_name": "HAL"}, "is_bot": True},
]
CHANNELS = [
    {
        "id": "C01GENERAL",
        "name": "general",
        "created": "1704067200",
        "creator": "U01ALICE",
        "is_archived": False,
        "is_general": True,
        "members": ["U01ALICE", "U02BOB"],
        "topic": {"value": "Company-wide", "creator": "U01ALICE", "last_set": "1704067200"},
        "purpose": {"value": "", "creator": "", "last_set": "0"},
    },
    {"id": "C02DEV", "name": "dev", "created": 1704067300, "members": ["U01ALICE"], "topic": {"value": ""}},
]
DMS = [{"id": "D01XYZ", "created": 1704067400, "members": ["U01ALICE", "U02BOB"]}]
GROUPS = [{"id": "G01SECRET", "name": "secret", "created": 1704067500, "members": ["U01ALICE"]}]


def msg(ts: str, text: str, user: str | None = "U01ALICE", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "message", "text": text, "ts": ts}
    if user:
        out["user"] = user
        out["team"] = "T0TEAM"
    out.update(extra)
    return out


GENERAL_DAY1 = [
    msg("1704164400.000100", "<@U02BOB> has joined the channel", subtype="channel_join", user="U02BOB"),
    msg(
        "1704164460.000200",
        "Hi <@U02BOB>, see <#C02DEV|dev> and <https://example.org/docs|the docs> &amp; <https://example.org/x> &lt;3 <!here>",
        client_msg_id="6f0e8a52-0000-4000-8000-000000000001",
        thread_ts="1704164460.000200",
        reply_count=2,
        replies=[{"user": "U02BOB", "ts": "1704164520.000300"}, {"user": "U01ALICE", "ts": "1704168000.000500"}],
    ),
    msg("1704164520.000300", "thread answer", "U02BOB", thread_ts="1704164460.000200", parent_user_id="U01ALICE"),
    msg(
        "1704164580.000400",
        "",
        None,
        subtype="bot_message",
        bot_id="B01CI",
        username="CI",
        attachments=[{"fallback": "Build #12 passed", "title": "Build #12", "text": "passed"}],
    ),
    msg(
        "1704164640.000450",
        "typo fixd",
        edited={"user": "U01ALICE", "ts": "1704164700.000000"},
    ),
]
GENERAL_DAY2 = [
    msg(
        "1704168000.000500",
        "broadcast reply",
        subtype="thread_broadcast",
        thread_ts="1704164460.000200",
    ),
    msg(
        "1704168060.000600",
        "",
        "U02BOB",
        subtype="file_share",
        files=[
            {
                "id": "F01",
                "name": "report.pdf",
                "title": "Report",
                "size": 1000,
                "url_private": "https://files.slack.com/F01/report.pdf",
            }
        ],
    ),
    msg("1704168120.000700", "to be deleted", "U02BOB"),
    {
        "type": "message",
        "subtype": "message_changed",
        "ts": "1704168200.000000",
        "message": msg("1704164640.000450", "typo fixed", edited={"user": "U01ALICE", "ts": "1704168200.000000"}),
    },
    {"type": "message", "subtype": "message_deleted", "ts": "1704168300.000000", "deleted_ts": "1704168120.000700"},
    msg("1704168400.000800", "I'm a bot user", "U03HAL"),
]
DEV_DAY = [msg("1704200000.000100", "dev talk :tada:")]
DM_DAY = [msg("1704210000.000100", "psst", "U02BOB")]


def export_files() -> dict[str, Any]:
    return {
        "channels.json": CHANNELS,
        "users.json": USERS,
        "dms.json": DMS,
        "groups.json": GROUPS,
        "integration_logs.json": [],
        "general/2024-01-02.json": GENERAL_DAY1,
        "general/2024-01-03.json": GENERAL_DAY2,
        "dev/2024-01-02.json": DEV_DAY,
        "D01XYZ/2024-01-02.json": DM_DAY,
    }


def write_dir(root: Path, files: dict[str, Any]) -> Path:
    for name, value in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), "utf-8")
    return root


def write_zip(path: Path, files: dict[str, Any], prefix: str = "") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in files.items():
            archive.writestr(prefix + name, value if isinstance(value, str) else json.dumps(value))
    return path


def _read(path: Path, **kwargs: Any) -> tuple[list[ImportedMessage], ImportReport]:
    report = ImportReport()
    return list(iter_slack(path, report=report, **kwargs)), report


def _ts(ts: str) -> datetime:
    seconds, _, micros = ts.partition(".")
    return datetime.fromtimestamp(int(seconds), UTC).replace(microsecond=int(micros))


def test_directory_export(tmp_path: Path) -> None:
    messages, report = _read(write_dir(tmp_path / "Acme Slack export Jan 1 2024 - Jan 5 2024", export_files()))

    by_id = {m.message_id: m for m in messages}
    general = [m for m in messages if m.channel_name == "general"]
    assert [m.message_id for m in general] == [
        "1704164460.000200",
        "1704164520.000300",
        "1704164580.000400",
        "1704164640.000450",
        "1704168000.000500",
        "1704168060.000600",
        "1704168400.000800",
    ]
    first = by_id["1704164460.000200"]
    assert (first.platform, first.workspace_id, first.workspace_name) == ("slack", "T0TEAM", "Acme")
    assert (first.channel_id, first.channel_name, first.thread_id) == ("C01GENERAL", "general", None)
    assert first.created_at == _ts("1704164460.000200")
    assert first.author_name == "alice.l"
    assert first.text == (
        "Hi @Bob Stone, see #dev and the docs (https://example.org/docs) & https://example.org/x <3 @here"
    )

    reply = by_id["1704164520.000300"]
    assert (reply.kind, reply.thread_id, reply.reply_to) == ("reply", "1704164460.000200", "1704164460.000200")
    assert reply.thread_name == "Hi @Bob Stone, see #dev and the docs (https://example.org/d…"
    assert len(reply.thread_name) == 60
    broadcast = by_id["1704168000.000500"]
    assert (broadcast.kind, broadcast.thread_id, broadcast.platform_kind) == (
        "reply",
        "1704164460.000200",
        "thread_broadcast",
    )

    bot = by_id["1704164580.000400"]
    assert (bot.is_bot, bot.author_id, bot.author_name) == (True, "B01CI", "CI")
    assert bot.text == "[embed: Build #12 passed]"
    assert by_id["1704168400.000800"].is_bot  # a user marked is_bot

    edited = by_id["1704164640.000450"]
    assert edited.text == "typo fixed"
    assert edited.edited_at == _ts("1704168200.000000")

    file_share = by_id["1704168060.000600"]
    assert file_share.text == "[attachment: report.pdf]" and file_share.content == ""
    assert file_share.attachments[0].url == "https://files.slack.com/F01/report.pdf"

    assert "1704168120.000700" not in by_id  # deleted
    assert report.system_skipped == 1  # channel_join

    dm = next(m for m in messages if m.channel_id == "D01XYZ")
    assert dm.channel_name == "DM: alice.l, Bob Stone"
    channel_kinds = {c.channel_id: (c.kind, c.is_direct, c.is_private) for c in report.channels.values()}
    assert channel_kinds["D01XYZ"] == ("dm", True, True)
    assert channel_kinds["C01GENERAL"] == ("channel", False, False)
    thread = report.channels[("slack", "T0TEAM", "C01GENERAL", "1704164460.000200")]
    assert thread.thread_name == reply.thread_name
    assert not report.problems


def test_zip_reads_like_the_directory_even_with_a_wrapping_folder(tmp_path: Path) -> None:
    from_dir, _ = _read(write_dir(tmp_path / "Acme Slack export", export_files()))
    plain, _ = _read(write_zip(tmp_path / "Acme Slack export.zip", export_files()))
    wrapped, report = _read(write_zip(tmp_path / "Acme2.zip", export_files(), prefix="Acme Slack export/"))
    assert from_dir == plain
    assert [m.message_id for m in wrapped] == [m.message_id for m in plain]
    assert report.files[0].startswith(f"{tmp_path / 'Acme2.zip'}!Acme Slack export/")


def test_read_export_detects_slack_and_keeps_system_messages_on_request(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "export.zip", export_files())
    export = read_export(path, include_system=True, workspace_id="W-override")
    join = next(m for m in export.messages if m.platform_kind == "channel_join")
    assert join.kind == "system" and join.workspace_id == "W-override"


def test_malformed_records_and_files(tmp_path: Path) -> None:
    files = export_files()
    files["general/2024-01-02.json"] = [
        msg("1704164460.000200", "good"),
        {"type": "message", "text": "no ts", "user": "U01ALICE"},
        msg("not-a-ts", "bad ts"),
        msg("1704164470.000000", "no author", None),
        msg("1704164480.000000", 42),
        "not an object",
    ]
    files["general/2024-01-03.json"] = "{ not json"
    files["dev/2024-01-02.json"] = {"not": "an array"}
    root = write_dir(tmp_path / "bad", files)

    messages, report = _read(root)

    assert [m.text for m in messages if m.channel_name == "general"] == ["good"]
    day1 = str(root / "general" / "2024-01-02.json")
    problems = [(p.path, p.position) for p in report.problems]
    assert problems == [
        (str(root / "dev" / "2024-01-02.json"), ""),
        (day1, "[1]"),
        (day1, "[2]"),
        (day1, "[3]"),
        (day1, "[4]"),
        (day1, "[5]"),
        (str(root / "general" / "2024-01-03.json"), ""),
    ]
    assert "JSON array" in report.problems[0].problem
    assert "'ts'" in report.problems[1].problem
    assert report.problems[3].message_id == "1704164470.000000"
    assert "author" in report.problems[3].problem
    assert "'text'" in report.problems[4].problem

    with pytest.raises(MalformedExport) as info:
        list(iter_slack(root, strict=True))
    assert info.value.details["position"] == ""
    assert info.value.details["path"] == str(root / "dev" / "2024-01-02.json")


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("ts", "253402300800.000000", "year 9999"),  # 10000-01-01: found by the property test below
        ("ts", "9" * 5000, "year 9999"),  # more digits than int() reads
        ("ts", "17041644²0.000100", "Slack timestamp"),  # a digit to str.isdigit, not to int()
        ("ts", ".5", "Slack timestamp"),
        ("edited", {"ts": "253402300800.5"}, "'edited.ts'"),
        ("thread_ts", "99999999999999", "'thread_ts'"),
    ],
    ids=["year-10000", "5000-digits", "superscript", "no-seconds", "edited", "thread"],
)
def test_a_timestamp_no_date_can_hold_is_a_skipped_record(tmp_path: Path, field: str, value: Any, words: str) -> None:
    files = export_files()
    bad = msg("1704164450.000100", "bad")
    bad[field] = value
    files["general/2024-01-02.json"] = [msg("1704164440.000100", "before"), bad, msg("1704164460.000100", "after")]
    root = write_dir(tmp_path / "x", files)

    messages, report = _read(root)

    texts = [m.text for m in messages]
    assert "before" in texts and "after" in texts and "bad" not in texts
    assert [(p.path, p.position) for p in report.problems] == [(str(root / "general" / "2024-01-02.json"), "[1]")]
    assert words in report.problems[0].problem


@pytest.mark.parametrize("as_zip", [False, True], ids=["directory", "zip"])
def test_an_integer_beyond_64_bits_costs_one_record_not_the_day(tmp_path: Path, as_zip: bool) -> None:
    """ijson's C backend rejects such an integer (valid JSON): the day is decoded whole instead,
    as the Discord reader does, and only the record holding it is skipped."""
    files = export_files()
    bad = msg("1704164450.000100", "bad")
    bad["ts"] = 10**400
    files["general/2024-01-02.json"] = [msg("1704164440.000100", "before"), bad, msg("1704164460.000100", "after")]
    root = write_zip(tmp_path / "x.zip", files) if as_zip else write_dir(tmp_path / "x", files)

    messages, report = _read(root)

    texts = [m.text for m in messages]
    assert "before" in texts and "after" in texts and "bad" not in texts
    assert [p.position for p in report.problems] == ["[1]"]
    assert "year 9999" in report.problems[0].problem


def test_a_day_file_over_the_whole_read_bound_is_reported_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_jsonstream, "WHOLE_MAX_BYTES", 64)
    files = export_files()
    bad = msg("1704164450.000100", "bad")
    bad["ts"] = 10**400
    files["general/2024-01-02.json"] = [msg("1704164440.000100", "before"), bad]
    root = write_dir(tmp_path / "x", files)

    messages, report = _read(root)

    assert "before" not in [m.text for m in messages]
    day = str(root / "general" / "2024-01-02.json")
    assert [(p.path, p.position) for p in report.problems] == [(day, "")]
    assert "integer overflow" in report.problems[0].problem


def test_unlisted_folders_and_org_users(tmp_path: Path) -> None:
    files = {
        "org_users.json": USERS,
        "channels.json": [],
        "mystery/2024-01-02.json": [msg("1704164460.000200", "hello <@U02BOB|bob>")],
    }
    messages, _report = _read(write_dir(tmp_path / "grid", files))
    assert [(m.channel_id, m.channel_name, m.text) for m in messages] == [("mystery", "mystery", "hello @Bob Stone")]
    assert messages[0].workspace_id == "T0TEAM"


def test_not_a_slack_export(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UnrecognizedExport, match=r"no channels\.json or users\.json"):
        list(iter_slack(tmp_path / "empty"))
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UnrecognizedExport, match="neither a directory nor a zip"):
        list(iter_slack(tmp_path / "file.txt"))
    with pytest.raises(UnrecognizedExport, match="no such Slack export"):
        list(iter_slack(tmp_path / "missing.zip"))


def test_same_report_deduplicates_a_second_export(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "a.zip", export_files())
    report = ImportReport()
    first = list(iter_slack(path, report=report))
    second = list(iter_slack(path, report=report))
    assert first and second == []
    assert report.duplicates == len(first)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<@U1>", "@Ann"),
        ("<@U9|zed>", "@zed"),
        ("<@U9>", "@U9"),
        ("<#C1>", "#general"),
        ("<!channel>", "@channel"),
        ("<!subteam^S1|@devs>", "@devs"),
        ("<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"),
        ("<mailto:a@b.c|a@b.c>", "a@b.c"),
        ("<https://x.y/|https://x.y/>", "https://x.y/"),
        ("a &lt;b&gt; &amp;lt;", "a <b> &lt;"),
        ("no markup", "no markup"),
    ],
)
def test_slack_text(text: str, expected: str) -> None:
    assert slack_text(text, {"U1": "Ann"}, {"C1": "general"}) == expected


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**12) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_fields = st.sampled_from(
    [
        "ts",
        "text",
        "user",
        "subtype",
        "thread_ts",
        "edited",
        "files",
        "file",
        "attachments",
        "bot_id",
        "username",
        "message",
        "deleted_ts",
        "user_profile",
        "bot_profile",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(breakage=st.lists(st.tuples(st.integers(0, 3), _fields, _json), max_size=8))
def test_arbitrary_field_values_never_crash_the_reader(breakage: list) -> None:
    records = [msg(f"17041644{i}0.000100", f"m{i}") for i in range(4)]
    for index, field, value in breakage:
        records[index][field] = value
    with tempfile.TemporaryDirectory() as tmp:
        root = write_dir(
            Path(tmp), {"channels.json": CHANNELS, "users.json": USERS, "general/2024-01-02.json": records}
        )
        report = ImportReport()
        list(iter_slack(root, report=report, include_system=True))
    assert report.records == 4
    assert all(p.position.startswith("[") for p in report.problems)
