"""DiscordChatExporter JSON: mapping, version drift, threads, DMs, order, parts, problems."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omoide.importers import (
    ImportReport,
    MalformedExport,
    UnrecognizedExport,
    _jsonstream,
    iter_discord,
    read_export,
    snowflake_time,
)

from .dce import ALICE, BOB, BOT, DM_GUILD, GENERAL, GUILD, THREAD, document, message, t, user, write


def _read(*paths: Path, **kwargs: object) -> tuple[list, ImportReport]:
    report = ImportReport()
    messages = list(iter_discord(list(paths), report=report, **kwargs))  # type: ignore[arg-type]
    return messages, report


def test_channel_messages_map_to_the_neutral_shape(tmp_path: Path) -> None:
    nameless = user("200000000000000003", "carol")  # no nickname: old exports
    first = message(t(5, 3, 0, 1), "hello @Bobby", mentions=[BOB])
    second = message(t(5, 3, 2), "hi!", BOB, timestampEdited="2025-01-05T12:10:00+09:00")
    third = message(t(5, 3, 4), "yo", nameless)
    path = write(tmp_path / "g.json", document([first, second, third]))

    messages, report = _read(path)

    assert [m.message_id for m in messages] == [first["id"], second["id"], third["id"]]
    m = messages[0]
    assert (m.platform, m.workspace_id, m.workspace_name) == ("discord", GUILD["id"], "Test Guild")
    assert (m.channel_id, m.channel_name, m.thread_id, m.thread_name) == (GENERAL["id"], "general", None, None)
    assert m.created_at == datetime(2025, 1, 5, 3, 0, 1, tzinfo=UTC)  # +09:00 in the file → UTC
    assert m.created_at.utcoffset() is not None and m.created_at.utcoffset().total_seconds() == 0
    assert (m.author_id, m.author_name, m.is_bot) == (ALICE["id"], "Alice", False)
    assert m.text == m.content == "hello @Bobby"
    assert (m.kind, m.platform_kind) == ("message", "Default")
    assert m.url == f"https://discord.com/channels/{GUILD['id']}/{GENERAL['id']}/{first['id']}"
    assert messages[1].edited_at == datetime(2025, 1, 5, 3, 10, tzinfo=UTC)
    assert messages[1].author_name == "Bobby"
    assert messages[2].author_name == "carol"
    assert report.records == report.messages == 3
    assert next(iter(report.channels.values())).kind == "GuildTextChat"
    assert report.files == [str(path)]
    assert snowflake_time(m.message_id) == datetime(2025, 1, 5, 3, 0, 1, tzinfo=UTC)


def test_thread_file_names_its_parent_channel_in_category(tmp_path: Path) -> None:
    reply_target = message(t(6, 1), "shall we release on friday?")
    answer = message(
        t(6, 1, 5),
        "yes",
        BOB,
        kind="Reply",
        reference={"type": "Default", "messageId": reply_target["id"], "channelId": THREAD["id"], "guildId": "1"},
    )
    path = write(tmp_path / "t.json", document([reply_target, answer], channel=THREAD))

    messages, report = _read(path)

    assert {(m.channel_id, m.channel_name, m.thread_id, m.thread_name) for m in messages} == {
        (GENERAL["id"], "general", THREAD["id"], "release plan")
    }
    assert messages[1].kind == "reply" and messages[1].reply_to == reply_target["id"]
    assert messages[1].url.endswith(f"/{THREAD['id']}/{answer['id']}")
    channel = report.channels[("discord", GUILD["id"], GENERAL["id"], THREAD["id"])]
    assert channel.kind == "GuildPublicThread" and channel.thread_name == "release plan"


def test_attachments_embeds_stickers_and_empty_content(tmp_path: Path) -> None:
    only_file = message(
        t(7, 2),
        "",
        attachments=[
            {
                "id": "1",
                "url": "https://cdn.discordapp.com/attachments/1/2/plan.pdf",
                "fileName": "plan.pdf",
                "fileSizeBytes": 1234,
            }
        ],
    )
    with_embed = message(
        t(7, 2, 1),
        "see https://example.org/post",
        embeds=[
            {
                "title": "A post",
                "url": "https://example.org/post",
                "timestamp": None,
                "description": "About things",
                "images": [],
                "fields": [{"name": "Status", "value": "open", "isInline": True}],
            }
        ],
    )
    embed_only = message(t(7, 2, 2), "", BOT, embeds=[{"title": "", "url": "https://example.org/x", "description": ""}])
    sticker_only = message(
        t(7, 2, 3), "", stickers=[{"id": "9", "name": "Wave", "format": "Lottie", "sourceUrl": "https://x/9.json"}]
    )
    nothing = message(t(7, 2, 4), "")
    path = write(tmp_path / "a.json", document([only_file, with_embed, embed_only, sticker_only, nothing]))

    messages, report = _read(path)

    texts = [m.text for m in messages]
    assert texts == [
        "[attachment: plan.pdf]",
        "see https://example.org/post\n[embed: A post — About things — Status: open]",
        "[embed: https://example.org/x]",
        "[sticker: Wave]",
    ]
    assert messages[0].content == ""
    assert messages[0].attachments[0].name == "plan.pdf"
    assert messages[0].attachments[0].size_bytes == 1234
    assert messages[0].attachments[0].url == "https://cdn.discordapp.com/attachments/1/2/plan.pdf"
    assert messages[2].is_bot
    assert report.empty_skipped == 1


def test_system_messages_are_skipped_by_default_and_kept_on_request(tmp_path: Path) -> None:
    join = message(t(8, 1), "Joined the server.", BOB, kind="GuildMemberJoin")
    pin = message(t(8, 1, 1), "Pinned a message.", kind="ChannelPinnedMessage")
    starter = message(t(8, 1, 2), "", kind="21")  # ThreadStarterMessage: written as a number
    normal = message(t(8, 1, 3), "welcome!")
    path = write(tmp_path / "s.json", document([join, pin, starter, normal]))

    messages, report = _read(path)
    assert [m.text for m in messages] == ["welcome!"]
    assert report.system_skipped == 3

    kept, report = _read(path, include_system=True)
    assert [(m.kind, m.platform_kind) for m in kept] == [
        ("system", "GuildMemberJoin"),
        ("system", "ChannelPinnedMessage"),
        ("message", "Default"),
    ]
    assert report.empty_skipped == 1  # the starter message has no content


def test_direct_messages_sit_in_the_pseudo_guild(tmp_path: Path) -> None:
    dm_channel = {"id": "300", "type": "DirectTextChat", "categoryId": None, "category": None, "name": "bob"}
    path = write(tmp_path / "dm.json", document([message(t(9, 1), "psst")], guild=DM_GUILD, channel=dm_channel))

    messages, report = _read(path)

    assert messages[0].workspace_id == "0"
    assert messages[0].url == f"https://discord.com/channels/@me/300/{messages[0].message_id}"
    channel = next(iter(report.channels.values()))
    assert channel.is_direct and channel.is_private


def test_reversed_export_reads_the_same_and_read_export_sorts(tmp_path: Path) -> None:
    msgs = [message(t(10, 1, i), f"m{i}") for i in range(5)]
    forward = write(tmp_path / "f" / "x.json", document(msgs))
    backward = write(tmp_path / "b" / "x.json", document(list(reversed(msgs))))

    assert [m.text for m in read_export(backward).messages] == [f"m{i}" for i in range(5)]
    a = {m.message_id: m for m in read_export(forward).messages}
    b = {m.message_id: m for m in read_export(backward).messages}
    assert a == b


def test_partitions_are_read_in_order_and_overlaps_deduplicated(tmp_path: Path) -> None:
    msgs = [message(t(11, 1, i), f"m{i}") for i in range(12)]
    base = "Test Guild - Text Channels - general [1100000000000000010]"
    write(tmp_path / f"{base}.json", document(msgs[:5]))
    write(tmp_path / f"{base} [part 2].json", document(msgs[5:10]))
    write(tmp_path / f"{base} [part 10].json", document(msgs[10:]))
    # a later, overlapping export of the same channel
    write(tmp_path / "later" / f"{base} (after 2025-01-11).json", document(msgs[8:]))

    messages, report = _read(tmp_path)

    assert [m.text for m in messages] == [f"m{i}" for i in range(12)]
    assert report.duplicates == 4
    assert [Path(f).name for f in report.files][:3] == [
        f"{base}.json",
        f"{base} [part 2].json",
        f"{base} [part 10].json",
    ]

    # the same report, read again: nothing new
    again = list(iter_discord(tmp_path, report=report))
    assert again == [] and report.duplicates == 4 + 16


def test_media_folders_are_not_read_as_exports(tmp_path: Path) -> None:
    base = "Test Guild - Text Channels - general [1100000000000000010]"
    write(tmp_path / f"{base}.json", document([message(t(11, 2), "with media")]))
    write(tmp_path / f"{base}.json_Files" / "sticker-749054660769218631.json", {"v": "5.7.4", "layers": []})
    messages, report = _read(tmp_path)
    assert [m.text for m in messages] == ["with media"]
    assert not report.problems and len(report.files) == 1


def test_old_export_without_optional_keys(tmp_path: Path) -> None:
    """An older exporter: no exportedAt, roles, nickname, stickers, inlineEmojis; emoji id null."""
    old_user = user("200000000000000005", "Deleted User", old=True)
    msgs = [
        message(t(12, 1), "first", old_user, old=True),
        message(
            t(12, 1, 1),
            "second",
            old_user,
            old=True,
            reactions=[
                {
                    "emoji": {"id": None, "name": "👍", "isAnimated": False, "imageUrl": "https://x/1f44d.svg"},
                    "count": 1,
                }
            ],
        ),
    ]
    doc = document(msgs, old=True)
    doc["channel"] = {"id": "400", "type": "GuildTextChat", "categoryId": "401", "category": "c", "name": "old"}
    for m in doc["messages"]:
        del m["callEndedTimestamp"]
        del m["timestampEdited"]
    path = write(tmp_path / "old.json", doc)

    messages, report = _read(path)

    assert [m.text for m in messages] == ["first", "second"]
    assert messages[0].author_name == "Deleted User"
    assert messages[0].edited_at is None
    assert not report.problems


def test_forwards_commands_and_raw_markup(tmp_path: Path) -> None:
    forward = message(
        t(13, 1),
        "",
        reference={"type": "Forward", "messageId": "5", "channelId": "6", "guildId": "7"},
        forwardedMessage={
            "timestamp": "2025-01-01T00:00:00+00:00",
            "content": "original text",
            "attachments": [{"id": "8", "url": "https://x/8/pic.png", "fileName": "pic.png", "fileSizeBytes": 1}],
            "embeds": [],
            "stickers": [],
        },
    )
    command = message(
        t(13, 1, 1),
        "Reminder set for tomorrow",
        BOT,
        kind="20",
        interaction={"id": "77", "name": "remind", "user": BOB},
    )
    raw = message(
        t(13, 1, 2),
        "<@200000000000000002> see <#123> <:party:456> at <t:1736899200:F> <@&789>",
        mentions=[BOB],
    )
    path = write(tmp_path / "f.json", document([forward, command, raw]))

    messages, _ = _read(path)

    assert messages[0].kind == "forward" and messages[0].reply_to is None
    assert messages[0].text == "[forwarded message] original text / [attachment: pic.png]"
    assert [a.name for a in messages[0].attachments] == ["pic.png"]
    assert messages[1].kind == "command" and messages[1].invoked_by == BOB["id"]
    assert messages[1].text == "Reminder set for tomorrow\n[/remind used by Bobby]"
    assert messages[2].text == "@Bobby see #123 :party: at 2025-01-15 00:00 UTC @role"


def test_reply_to_a_missing_message_is_kept(tmp_path: Path) -> None:
    orphan = message(t(14, 1), "as I said", kind="Reply", reference={"messageId": "999", "channelId": "1"})
    no_ref = message(t(14, 1, 1), "hmm", kind="Reply")
    messages, _ = _read(write(tmp_path / "r.json", document([orphan, no_ref])))
    assert [(m.kind, m.reply_to) for m in messages] == [("reply", "999"), ("reply", None)]


def test_malformed_records_are_reported_with_their_position(tmp_path: Path) -> None:
    good = message(t(15, 1), "ok")
    no_author = message(t(15, 1, 1), "who?")
    del no_author["author"]
    bad_time = message(t(15, 1, 2), "when?", timestamp="yesterday")
    bad_content = message(t(15, 1, 3), "x")
    bad_content["content"] = 42
    not_object = "just a string"
    null_content = message(t(15, 1, 4), "", attachments=[{"id": "1", "url": "https://x/1/a.txt"}])
    null_content["content"] = None
    path = write(tmp_path / "bad.json", document([good, no_author, bad_time, bad_content, not_object, null_content]))

    messages, report = _read(path)

    assert [m.text for m in messages] == ["ok", "[attachment: a.txt]"]
    assert [(p.position, p.message_id) for p in report.problems] == [
        ("messages[1]", no_author["id"]),
        ("messages[2]", bad_time["id"]),
        ("messages[3]", bad_content["id"]),
        ("messages[4]", None),
    ]
    assert "author" in report.problems[0].problem
    assert "timestamp" in report.problems[1].problem
    assert str(report.problems[0]).startswith(f"{path}: messages[1]: ")
    assert report.records == 6


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timestamp", "9999-12-31T23:00:00-05:00"),  # 10000-01-01 in UTC
        ("timestamp", "0001-01-01T00:00:00+05:00"),  # before year 1 in UTC
        ("timestampEdited", "9999-12-31T23:30:00-01:00"),
    ],
)
def test_a_time_past_the_calendar_in_utc_is_a_skipped_record(tmp_path: Path, field: str, value: str) -> None:
    bad = message(t(15, 1, 1), "bad")
    bad[field] = value
    path = write(tmp_path / "far.json", document([message(t(15, 1), "before"), bad, message(t(15, 1, 2), "after")]))

    messages, report = _read(path)

    assert [m.text for m in messages] == ["before", "after"]
    assert [(p.position, p.message_id) for p in report.problems] == [("messages[1]", bad["id"])]
    assert "years 1–9999" in report.problems[0].problem and field in report.problems[0].problem


def test_snowflake_time_rejects_what_no_snowflake_can_be() -> None:
    assert snowflake_time("175928847299117063").year == 2016
    with pytest.raises(ValueError, match="too large"):
        snowflake_time("9" * 30)


def test_strict_mode_raises_on_the_first_malformed_record(tmp_path: Path) -> None:
    no_id = message(t(16, 1), "x")
    del no_id["id"]
    path = write(tmp_path / "bad.json", document([message(t(16, 1), "fine"), no_id]))
    seen = []
    with pytest.raises(MalformedExport) as info:
        seen.extend(iter_discord(path, strict=True))
    assert [m.text for m in seen] == ["fine"]
    assert info.value.details == {"path": str(path), "position": "messages[1]", "problem": "missing 'id'"}
    assert info.value.code == "MALFORMED_EXPORT"


def test_truncated_file_keeps_what_came_before(tmp_path: Path) -> None:
    text = json.dumps(document([message(t(17, 1, i), f"m{i}") for i in range(4)]), indent=2)
    cut = text[: text.index('"m3"')]
    path = tmp_path / "cut.json"
    path.write_text(cut, encoding="utf-8")

    messages, report = _read(path)

    assert [m.text for m in messages] == ["m0", "m1", "m2"]
    assert len(report.problems) == 1
    assert report.problems[0].position == "messages[3]"
    assert "invalid JSON" in report.problems[0].problem


def _big_integer_file(tmp_path: Path) -> Path:
    odd = message(t(17, 1, 1), "m1")
    odd["reactions"] = [{"count": 10**30}]  # valid JSON: yajl refuses integers beyond 64 bits
    records = [message(t(17, 1, 0), "m0"), odd, message(t(17, 1, 2), "m2")]
    return write(tmp_path / "big.json", document(records))


def test_an_integer_beyond_64_bits_is_read_by_decoding_the_file_whole(tmp_path: Path) -> None:
    messages, report = _read(_big_integer_file(tmp_path))
    assert [m.text for m in messages] == ["m0", "m1", "m2"]
    assert report.problems == []


def test_a_file_over_the_whole_read_bound_is_read_up_to_the_integer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_jsonstream, "WHOLE_MAX_BYTES", 64)
    messages, report = _read(_big_integer_file(tmp_path))
    assert [m.text for m in messages] == ["m0"]
    assert [p.position for p in report.problems] == ["messages[1]"]
    assert "integer overflow" in report.problems[0].problem


def test_invalid_json_is_never_decoded_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A truncated export (the usual invalid file, and it can be gigabytes) is reported from where
    streaming stopped, without reading it all into memory to find it invalid."""

    def refuse(data: bytes) -> None:
        raise AssertionError(f"decoded {len(data)} bytes whole")

    monkeypatch.setattr(_jsonstream, "decode_whole", refuse)
    text = json.dumps(document([message(t(17, 1, i), f"m{i}") for i in range(3)]))
    for name, content in (("cut.json", text[: text.index('"m2"')]), ("head.json", text[:30])):
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        _, report = _read(path)
        assert len(report.problems) == 1, name


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("this is not json", "not a DiscordChatExporter JSON export"),
        ("[1, 2, 3]", "not an object"),
        ('{"channel": {"id": "1"}, "messages": []}', "missing 'guild'"),
        ('{"guild": {"id": "1"}, "channel": {"id": "2"}}', "no 'messages' array"),
        ('{"guild": {"name": "g"}, "channel": {"id": "2"}, "messages": []}', "guild.id"),
        ("", "empty"),
    ],
)
def test_malformed_files_are_reported(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content, encoding="utf-8")
    messages, report = _read(path)
    assert messages == []
    assert len(report.problems) == 1
    assert report.problems[0].position == ""
    assert expected in report.problems[0].problem
    with pytest.raises(MalformedExport):
        list(iter_discord(path, strict=True))


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UnrecognizedExport, match="no such Discord export"):
        list(iter_discord(tmp_path / "nope.json"))


def test_header_after_messages_and_a_byte_order_mark(tmp_path: Path) -> None:
    doc = document([message(t(18, 1), "late header")])
    reordered = {"messages": doc["messages"], "guild": doc["guild"], "channel": doc["channel"]}
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(reordered).encode())
    messages, report = _read(path)
    assert [m.text for m in messages] == ["late header"]
    assert not report.problems


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**19) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_fields = st.sampled_from(
    [
        "id",
        "type",
        "timestamp",
        "timestampEdited",
        "content",
        "author",
        "attachments",
        "embeds",
        "stickers",
        "mentions",
        "reference",
        "interaction",
        "forwardedMessage",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(breakage=st.lists(st.tuples(st.integers(0, 3), _fields, _json), max_size=8))
def test_arbitrary_field_values_never_crash_the_reader(breakage: list) -> None:
    msgs = [message(t(20, 1, i), f"m{i}", BOB) for i in range(4)]
    for index, field, value in breakage:
        msgs[index][field] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp) / "fuzz.json", document(msgs))
        report = ImportReport()
        kept = list(iter_discord(path, report=report, include_system=True))
    accounted = len(kept) + len(report.problems) + report.empty_skipped + report.duplicates
    assert accounted == report.records == 4
    assert all(p.position.startswith("messages[") for p in report.problems)
