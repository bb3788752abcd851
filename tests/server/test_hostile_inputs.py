"""Inputs a client can send that are not what the schema's types say: lone surrogates and NaN in
JSON bodies, file names the file system refuses, ids that cannot go into a response header. Each
is a typed 4xx (or a sane answer), never a 500, and nothing malformed is stored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest

from omoide.errors import InvalidContent
from omoide.models import Message, ToolUseBlock
from omoide.transcripts import dump_records, user_record

from .conftest import ADMIN_KEY, WS_A, WS_B
from .test_errors import SESSION, _is_problem

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)

JSON = {"content-type": "application/json"}
JSONL = dump_records([user_record("hello", ts=1.0)]).encode()


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        # a message's text: this was a 500 (UnicodeEncodeError while sizing the message)
        (
            "/v1/sessions/messages",
            b'{"session": {"channel": "42", "user": "7"}, "text": "a\\ud800b"}',
            ["body", "text"],
        ),
        # the query is echoed in the answer: this was a 500 (the response could not be serialised)
        ("/v1/search", b'{"query": "\\udc00 x"}', ["body", "query"]),
        (
            "/v1/users/7/memories",
            b'{"content": "x", "metadata": {"k": ["ok", "\\ud83d"]}}',
            ["body", "metadata", "k", "1"],
        ),
        ("/v1/users/7/memories", b'{"content": "x", "metadata": {"\\ud800": 1}}', ["body", "metadata", "\\ud800"]),
        (
            "/v1/sessions/chat",
            b'{"session": {"channel": "42", "user": "7"}, "text": "hi", "system": "\\uDFFF"}',
            ["body", "system"],
        ),
    ],
)
async def test_lone_surrogates_in_a_json_body_are_422(client, tenants, path, body, loc):
    response = await client.post(path, headers={**tenants.ha, **JSON}, content=body)
    problem = _is_problem(response, 422, "INVALID_INPUT")
    assert "surrogate" in problem["detail"] and problem["errors"][0]["loc"] == loc, problem


async def test_surrogate_pairs_and_ordinary_text_still_pass(client, tenants):
    body = b'{"session": {"channel": "42", "user": "7"}, "text": "\\ud83c\\udf89 \\u732b NaN Infinity"}'
    response = await client.post("/v1/sessions/messages", headers={**tenants.ha, **JSON}, content=body)
    assert response.status_code == 201, response.text
    assert response.json()["message"]["text"] == "🎉 猫 NaN Infinity"


async def test_raw_utf8_encoded_surrogates_are_not_utf8(client, tenants):
    body = b'{"session": {"channel": "42", "user": "7"}, "text": "a\xed\xa0\x80b"}'  # CESU-style bytes of U+D800
    response = await client.post("/v1/sessions/messages", headers={**tenants.ha, **JSON}, content=body)
    assert "UTF-8" in _is_problem(response, 422, "INVALID_INPUT")["detail"]


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
async def test_nan_and_infinity_are_not_json(client, tenants, memory, constant):
    """Python's parser takes them; JSON (RFC 8259) has no such numbers. They were stored inside a
    tool block as the bare word NaN: a row that is not JSON (SQLite's json_valid says 0)."""
    body = (
        b'{"session": {"channel": "42", "user": "7"}, "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {"a": '
        + constant
        + b"}}]}"
    )
    response = await client.post("/v1/sessions/messages", headers={**tenants.ha, **JSON}, content=body)
    problem = _is_problem(response, 422, "INVALID_INPUT")
    assert problem["errors"][0]["loc"] == ["body", "content", "0", "input", "a"]
    assert constant.decode() in problem["detail"]
    memo = await client.post(
        "/v1/users/7/memories", headers={**tenants.ha, **JSON}, content=b'{"content": "x", "k": NaN}'
    )
    _is_problem(memo, 422, "INVALID_INPUT")
    with sqlite3.connect(Path(memory.store.path)) as db:
        assert db.execute("SELECT count(*) FROM session_messages").fetchone() == (0,)


async def test_the_library_refuses_what_cannot_be_stored_as_json(memory):
    """``Memory.append`` named the problem for neither: a lone surrogate raised UnicodeEncodeError,
    and a NaN in a tool block's input was stored as the non-JSON word NaN."""
    key = memory.session_key(platform="api", workspace="w", channel="1", user="7")
    with pytest.raises(InvalidContent, match="surrogate"):
        await memory.append(key, Message.user("broken \ud800 text"))
    with pytest.raises(InvalidContent, match="NaN"):
        await memory.append(key, Message("assistant", (ToolUseBlock("t1", "calc", {"x": float("nan")}),)))
    assert await memory.history(key) == []


@pytest.mark.parametrize(
    "filename",
    [
        "あ" * 150 + ".jsonl",  # 150 characters, 450 bytes: over the file system's 255 (was a 500)
        "a\x00b.jsonl",  # a NUL (was a 500: "embedded null byte")
        "ü" * 180 + ".json",
    ],
)
async def test_upload_names_the_file_system_refuses(client, tenants, filename):
    response = await client.post(
        "/v1/imports",
        headers={**tenants.ha, "content-type": "application/octet-stream"},
        params={"filename": filename},
        content=JSONL,
    )
    assert response.status_code in (201, 400), response.text
    if response.status_code == 400:
        assert response.json()["code"] in {"INVALID_INPUT", "UNRECOGNIZED_EXPORT"}


async def test_a_long_japanese_form_file_name_is_imported(client, tenants):
    response = await client.post("/v1/imports", headers=tenants.ha, files={"file": ("い" * 100 + ".jsonl", JSONL)})
    assert response.status_code == 201, response.text
    assert response.json()["messages"] == 1


async def test_broken_multipart_is_a_typed_400(client, tenants):
    for headers, content in (
        ({"content-type": "multipart/form-data"}, b"x"),  # no boundary
        ({"content-type": "multipart/form-data; boundary=zzz"}, b"garbage"),
    ):
        _is_problem(
            await client.post("/v1/imports", headers={**tenants.ha, **headers}, content=content), 400, "INVALID_INPUT"
        )
    two = await client.post(
        "/v1/imports", headers=tenants.ha, files=[("a", ("a.json", b"{}")), ("b", ("b.json", b"{}"))]
    )
    _is_problem(two, 400, "INVALID_INPUT")


@pytest.mark.parametrize("user", ["ユーザー", 'a"b', "a\r\nX-Injected: 1", "a;b\\c"])
async def test_export_file_names_of_any_user_id(client, tenants, user):
    """The user id is part of the Content-Disposition file name: a Japanese id was a 500 (headers
    are Latin-1), and CR LF reached the header (uvicorn then dropped the connection)."""
    path = f"/v1/users/{quote(user, safe='')}"
    await client.post(f"{path}/memories", headers=tenants.ha, json={"content": "好きな色は青"})
    response = await client.get(f"{path}/export", headers=tenants.ha)
    assert response.status_code == 200, response.text
    disposition = response.headers["content-disposition"]
    assert disposition.isascii() and "\r" not in disposition and "\n" not in disposition
    assert disposition.count('"') == 2 and "X-Injected" not in response.headers
    rows = [json.loads(line) for line in response.text.splitlines()]
    assert rows[0]["user"] == user and any(r.get("content") == "好きな色は青" for r in rows)


async def test_export_of_a_japanese_workspace(memory, client):
    token = (await memory.api_keys.create("ワークスペース")).token
    response = await client.get("/v1/export", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    disposition = response.headers["content-disposition"]
    assert disposition.isascii() and "filename*=UTF-8''omoide-%E3%83%AF" in disposition
    assert json.loads(response.text.splitlines()[0])["workspace"] == "ワークスペース"


async def test_text_and_content_together_are_refused(client, tenants):
    """`text` or `content`: given both, the text was dropped without a word (stored: only the blocks)."""
    both = {"session": SESSION, "text": "a", "content": [{"type": "text", "text": "b"}]}
    problem = _is_problem(
        await client.post("/v1/sessions/messages", headers=tenants.ha, json=both), 422, "INVALID_INPUT"
    )
    assert "text" in problem["detail"] and "content" in problem["detail"]
    window = await client.get("/v1/sessions/window", headers=tenants.ha, params={"channel": "42", "user": "7"})
    assert window.json()["messages"] == []


async def test_a_session_key_with_parts_is_refused(client, tenants):
    """A `key` names the session alone: parts beside it were ignored without a word (the message went
    to the key's session, not the channel the client named)."""
    key = f"api:{WS_A}:c=42:u=7"
    both = {"session": {"key": key, "channel": "9"}, "text": "hi"}
    problem = _is_problem(
        await client.post("/v1/sessions/messages", headers=tenants.ha, json=both), 422, "INVALID_INPUT"
    )
    assert "key" in problem["detail"] and "channel" in problem["detail"]
    query = await client.get("/v1/sessions/window", headers=tenants.ha, params={"key": key, "user": "8"})
    _is_problem(query, 422, "INVALID_INPUT")
    alone = await client.post("/v1/sessions/messages", headers=tenants.ha, json={"session": {"key": key}, "text": "hi"})
    assert alone.status_code == 201 and alone.json()["session_key"] == key
    by_key = await client.get("/v1/sessions/window", headers=tenants.ha, params={"key": key})
    assert [m["text"] for m in by_key.json()["messages"]] == ["hi"]


@pytest.mark.parametrize("workspace", ["a\x00b", "team\nA", "tab\there", "del\x7f"])
async def test_a_key_for_a_workspace_no_session_can_name_is_refused(client, tenants, workspace):
    """A workspace with a control character got a key whose every session request then failed with
    'session key part workspace contains a control character'."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    made = await client.post("/v1/admin/keys", headers=admin, json={"workspace": workspace})
    assert "control character" in _is_problem(made, 400, "INVALID_INPUT")["detail"]
    listed = (await client.get("/v1/admin/keys", headers=admin)).json()["items"]
    assert all(k["workspace_id"] in (WS_A, WS_B) for k in listed)


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


async def test_deeply_nested_metadata_is_refused_before_it_is_stored(client, tenants):
    """Metadata 300 objects deep was stored, then could not be serialised (pydantic stops at 255
    levels): that remember was a 500, and so was every later list of the user's memories."""
    h = tenants.ha
    deep = await client.post("/v1/users/7/memories", headers=h, json={"content": "深い", "metadata": _nested(300)})
    assert "metadata" in _is_problem(deep, 400, "INVALID_INPUT")["detail"]
    made = await client.post("/v1/users/7/memories", headers=h, json={"content": "浅い", "metadata": _nested(20)})
    assert made.status_code == 201, made.text
    patched = await client.patch(
        f"/v1/users/7/memories/{made.json()['memory']['id']}", headers=h, json={"metadata": _nested(300)}
    )
    _is_problem(patched, 400, "INVALID_INPUT")
    listed = await client.get("/v1/users/7/memories", headers=h)
    assert listed.status_code == 200 and [m["content"] for m in listed.json()["items"]] == ["浅い"]


async def test_metadata_is_bounded(client, tenants):
    """Memories are capped at OMOIDE_MEMORY_MAX_CHARS, their metadata was not: 900 KB per memory, and a
    page of 200 of them is 180 MB in one answer."""
    big = await client.post(
        "/v1/users/7/memories", headers=tenants.ha, json={"content": "x", "metadata": {"k": "x" * 20_000}}
    )
    assert "16,384" in _is_problem(big, 400, "INVALID_INPUT")["detail"]


async def test_deeply_nested_tool_input_is_refused_before_it_is_stored(client, tenants):
    """The same for a tool block's input: stored, and then the session's window was a 500 for good."""
    block = {"type": "tool_use", "id": "t1", "name": "calc", "input": _nested(300)}
    deep = await client.post("/v1/sessions/messages", headers=tenants.ha, json={"session": SESSION, "content": [block]})
    assert "nested" in _is_problem(deep, 400, "INVALID_CONTENT")["detail"]
    window = await client.get("/v1/sessions/window", headers=tenants.ha, params={"channel": "42", "user": "7"})
    assert window.status_code == 200 and window.json()["messages"] == []


async def test_a_refused_message_changes_nothing(client, tenants, memory):
    """A 400 stores nothing (docs/http.md), but `private` was applied before the message was checked:
    an empty message still created the session and made it private (or public)."""
    h = tenants.ha
    deep = [{"type": "tool_use", "id": "t1", "name": "calc", "input": _nested(100)}]
    for message in ({"text": "   "}, {"content": deep}):  # empty; a tool input nested too deep
        body = {"session": SESSION, **message, "private": True, "members": ["8"]}
        _is_problem(await client.post("/v1/sessions/messages", headers=h, json=body), 400, "INVALID_CONTENT")
    assert (await client.get("/v1/sessions", headers=h)).json()["items"] == []
    with sqlite3.connect(Path(memory.store.path)) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


async def test_the_same_memory_sent_at_once_is_remembered_once(client, tenants):
    """Remembering is check-then-insert: ten identical requests at once (a bot's retries) all found no
    near-duplicate and stored ten copies; one after another they merge into one."""
    body = {"content": "誕生日は3月15日", "tags": ["birthday"]}
    answers = await asyncio.gather(
        *[client.post("/v1/users/7/memories", headers=tenants.ha, json=body) for _ in range(10)]
    )
    assert all(a.status_code == 201 for a in answers), [a.text for a in answers]
    assert {a.json()["memory"]["id"] for a in answers} == {answers[0].json()["memory"]["id"]}
    assert sorted(a.json()["updated"] for a in answers) == [False] + [True] * 9
    listed = await client.get("/v1/users/7/memories", headers=tenants.ha)
    assert [m["content"] for m in listed.json()["items"]] == ["誕生日は3月15日"]
