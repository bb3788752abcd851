"""Problem details, auth failures, malformed and oversize bodies, request ids."""

from __future__ import annotations

import sys

import pytest

from omoide import Memory
from omoide.server import create_app

SESSION = {"platform": "discord", "channel": "42", "user": "7"}


def _is_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["code"] == code
    assert body["type"].startswith("https://") and body["title"] and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    return body


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_missing_bad_and_revoked_keys(client, tenants, memory):
    missing = _is_problem(await client.get("/v1/status"), 401, "AUTHENTICATION_FAILED")
    assert "Bearer" in missing["detail"]
    assert (await client.get("/v1/status")).headers["www-authenticate"].startswith("Bearer")
    for header in (
        "Bearer omk_" + "x" * 43,
        "Bearer not-a-key",
        "Bearer " + tenants.a + "x",
        "Basic " + tenants.a,
        "Bearer ",
    ):
        _is_problem(await client.get("/v1/status", headers={"Authorization": header}), 401, "AUTHENTICATION_FAILED")
    assert (await client.get("/v1/status", headers={"X-API-Key": tenants.a})).status_code == 200
    await memory.api_keys.revoke(tenants.a_id)
    _is_problem(await client.get("/v1/status", headers=tenants.ha), 401, "AUTHENTICATION_FAILED")
    assert (await client.get("/v1/status", headers=tenants.hb)).status_code == 200


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_malformed_bodies(client, tenants):
    h = tenants.ha
    broken = await client.post(
        "/v1/sessions/messages", headers={**h, "content-type": "application/json"}, content=b'{"session": '
    )
    _is_problem(broken, 422, "INVALID_INPUT")
    _is_problem(await client.post("/v1/sessions/messages", headers=h, json=[1, 2]), 422, "INVALID_INPUT")
    wrong = await client.post("/v1/sessions/messages", headers=h, json={"session": SESSION, "text": 5})
    assert "text" in _is_problem(wrong, 422, "INVALID_INPUT")["detail"]
    extra = await client.post("/v1/sessions/messages", headers=h, json={"session": SESSION, "txt": "x"})
    _is_problem(extra, 422, "INVALID_INPUT")
    empty = await client.post("/v1/sessions/messages", headers=h, json={"session": SESSION, "text": "  "})
    _is_problem(empty, 400, "INVALID_CONTENT")
    no_user = await client.post("/v1/sessions/messages", headers=h, json={"session": {"channel": "1"}, "text": "x"})
    assert "user" in _is_problem(no_user, 400, "INVALID_SESSION_KEY")["detail"]
    bad_key = await client.get("/v1/sessions/window", headers=h, params={"key": "nonsense"})
    _is_problem(bad_key, 400, "INVALID_SESSION_KEY")
    _is_problem(await client.post("/v1/users/7/memories", headers=h, json={"content": ""}), 400, "INVALID_INPUT")
    _is_problem(await client.post("/v1/users/7/memories/recall", headers=h, json={"query": " "}), 400, "INVALID_INPUT")
    _is_problem(await client.patch("/v1/users/7/memories/1", headers=h, json={}), 400, "INVALID_INPUT")
    _is_problem(await client.get("/v1/users/7/memories/0", headers=h), 422, "INVALID_INPUT")
    _is_problem(await client.post("/v1/search", headers=h, json={"query": ""}), 400, "INVALID_INPUT")
    _is_problem(await client.post("/v1/search", headers=h, json={"query": "x", "k": 0}), 422, "INVALID_INPUT")
    _is_problem(
        await client.post("/v1/imports", headers=h, params={"filename": "x.txt"}, content=b"x"), 400, "INVALID_INPUT"
    )
    _is_problem(await client.post("/v1/imports", headers=h, content=b""), 400, "INVALID_INPUT")
    # nothing readable: a typed 400 even when not strict, naming the file as sent, not the server's temp path
    lenient = _is_problem(await client.post("/v1/imports", headers=h, content=b"{not json"), 400, "UNRECOGNIZED_EXPORT")
    assert "export.json is not a chat export" in lenient["detail"] and "omoide-upload" not in lenient["detail"]
    strict = await client.post("/v1/imports", headers=h, params={"strict": True}, content=b"{not json")
    assert strict.status_code == 400 and strict.json()["code"] in {"MALFORMED_EXPORT", "UNRECOGNIZED_EXPORT"}
    _is_problem(await client.get("/v1/nothing-here", headers=h), 404, "NOT_FOUND")
    _is_problem(await client.put("/v1/status", headers=h), 405, "METHOD_NOT_ALLOWED")
    # a time the calendar holds only until it is read in UTC (10000-01-01 there): a 400, not a 500
    far = "9999-12-31T23:00:00-05:00"
    late = await client.post(
        "/v1/sessions/messages", headers=h, json={"session": SESSION, "text": "x", "created_at": far}
    )
    assert "years 1–9999" in _is_problem(late, 400, "INVALID_INPUT")["detail"]
    after = await client.post("/v1/search", headers=h, json={"query": "x", "since": far})
    assert "years 1–9999" in _is_problem(after, 400, "INVALID_INPUT")["detail"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_oversize_bodies(client, tenants):
    h = tenants.ha
    big = {"session": SESSION, "text": "x" * (70 * 1024)}  # the test limit is 64 KiB
    body = _is_problem(await client.post("/v1/sessions/messages", headers=h, json=big), 413, "REQUEST_TOO_LARGE")
    assert "65,536" in body["detail"]

    async def chunks():  # no Content-Length: counted as it streams
        for _ in range(20):
            yield b"x" * 8192

    streamed = await client.post(
        "/v1/sessions/messages", headers={**h, "content-type": "application/json"}, content=chunks()
    )
    _is_problem(streamed, 413, "REQUEST_TOO_LARGE")
    # even before authentication
    _is_problem(await client.post("/v1/sessions/messages", json=big), 413, "REQUEST_TOO_LARGE")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_upload_limit(server_settings, tenants):
    import httpx

    small = server_settings.model_copy(update={"http_max_upload_bytes": 4096})
    async with Memory.open(small) as mem:
        key = await mem.api_keys.create("w")
        transport = httpx.ASGITransport(app=create_app(mem, workers=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            too_big = await c.post(
                "/v1/imports", headers={"Authorization": f"Bearer {key.token}"}, content=b"{" + b" " * 5000 + b"}"
            )
    _is_problem(too_big, 413, "REQUEST_TOO_LARGE")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_request_ids(client, tenants):
    given = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123"
    made = await client.get("/healthz")
    assert len(made.headers["x-request-id"]) == 32
    unsafe = await client.get("/healthz", headers={"X-Request-ID": "a b\tc" * 50})
    assert unsafe.headers["x-request-id"] != "a b\tc" * 50
    problem = await client.get("/v1/status", headers={"X-Request-ID": "req-9"})
    assert problem.json()["request_id"] == "req-9"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_request_id_is_bound_for_logs(client, tenants, memory):
    import structlog

    seen: list[dict] = []

    def grab(logger, method, event):
        seen.append(dict(event))
        raise structlog.DropEvent

    structlog.configure(processors=[structlog.contextvars.merge_contextvars, grab])
    # an error response is logged at error level with the request's id
    from omoide.errors import StoreUnavailable

    async def down() -> int:
        raise StoreUnavailable("database is down")

    memory.store.schema_version = down  # type: ignore[method-assign]
    response = await client.get("/readyz", headers={"X-Request-ID": "log-me"})
    assert response.status_code == 503
    assert any(e.get("request_id") == "log-me" and e.get("event") == "http_error" for e in seen), seen


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_errors_need_no_package_beyond_the_server_extra(client, tenants, monkeypatch):
    """`pip install 'omoide[server]'` brings no orjson: error bodies must not need it (they were all 500s)."""
    monkeypatch.setitem(sys.modules, "orjson", None)  # `import orjson` now raises ImportError
    h = tenants.ha
    _is_problem(await client.get("/v1/status"), 401, "AUTHENTICATION_FAILED")
    _is_problem(await client.get("/v1/nothing-here", headers=h), 404, "NOT_FOUND")
    broken = await client.post(
        "/v1/sessions/messages", headers={**h, "content-type": "application/json"}, content=b'{"session": '
    )
    _is_problem(broken, 422, "INVALID_INPUT")
    _is_problem(await client.post("/v1/search", headers=h, json={"query": ""}), 400, "INVALID_INPUT")
    big = {"session": SESSION, "text": "x" * (70 * 1024)}
    _is_problem(await client.post("/v1/sessions/messages", headers=h, json=big), 413, "REQUEST_TOO_LARGE")


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_deeply_nested_json_is_422(client, tenants):
    """JSON nested past the parser's recursion limit is a malformed body: 422 as docs/http.md says, not 400."""
    deep = b'{"session": ' + b"[" * 5000 + b"]" * 5000 + b', "text": "x"}'
    response = await client.post(
        "/v1/sessions/messages", headers={**tenants.ha, "content-type": "application/json"}, content=deep
    )
    body = _is_problem(response, 422, "INVALID_INPUT")
    assert "nested" in body["detail"] and body["errors"][0]["loc"] == ["body"]
    not_utf8 = await client.post(
        "/v1/sessions/messages", headers={**tenants.ha, "content-type": "application/json"}, content=b'{"text": "\xff"}'
    )
    assert "UTF-8" in _is_problem(not_utf8, 422, "INVALID_INPUT")["detail"]
