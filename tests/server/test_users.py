"""``DELETE /v1/users/{user_id}``: erasing a user through the HTTP API, on SQLite and PostgreSQL."""

from __future__ import annotations

from omoide import Memory, Message

from .conftest import WS_A, WS_B


async def _plant(memory: Memory, workspace: str, user: str, text: str) -> None:
    """A memory and a session message of ``user`` in ``workspace``."""
    await memory.remember(f"{text}の誕生日は3月15日", workspace=workspace, user=user)
    key = memory.session_key(platform="discord", workspace=workspace, channel="42", user=user)
    await memory.append(key, Message.user(f"{text}です、こんにちは", author_id=user))


async def _has_data(memory: Memory, workspace: str, user: str) -> bool:
    key = memory.session_key(platform="discord", workspace=workspace, channel="42", user=user)
    return bool(await memory.memories.list(workspace, user)) and bool(await memory.history(key))


async def test_erasing_a_user_answers_a_receipt_and_leaves_others_alone(client, tenants, memory: Memory):
    await _plant(memory, WS_A, "7", "アリス")
    await _plant(memory, WS_A, "8", "ボブ")
    await _plant(memory, WS_B, "7", "別のアリス")  # the same user id in another workspace

    erased = await client.delete("/v1/users/7", headers=tenants.ha)
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert (body["workspace_id"], body["user_id"]) == (WS_A, "7")
    counts = body["erased"]
    assert counts["memories"] == 1 and counts["sessions"] == 1 and counts["messages"] == 1
    assert all(isinstance(n, int) and n >= 0 for n in counts.values())

    # gone for the library too; the other user and the other workspace keep theirs
    key = memory.session_key(platform="discord", workspace=WS_A, channel="42", user="7")
    assert await memory.memories.list(WS_A, "7") == [] and await memory.history(key) == []
    assert await _has_data(memory, WS_A, "8")
    assert await _has_data(memory, WS_B, "7")

    # idempotent: a second erasure is a receipt of zeros with the same kinds
    again = await client.delete("/v1/users/7", headers=tenants.ha)
    assert again.status_code == 200
    assert again.json()["erased"] == dict.fromkeys(counts, 0)


async def test_erasing_needs_a_key_and_a_valid_user_id(client, tenants, memory: Memory):
    await _plant(memory, WS_A, "7", "アリス")
    assert (await client.delete("/v1/users/7")).status_code == 401
    assert (await client.delete("/v1/users/7", headers={"Authorization": "Bearer omk_nope"})).status_code == 401
    too_long = await client.delete("/v1/users/" + "x" * 300, headers=tenants.ha)
    assert too_long.status_code == 422 and too_long.headers["content-type"].startswith("application/problem+json")
    assert await _has_data(memory, WS_A, "7")


async def test_openapi_documents_the_erasure(client):
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"]["/v1/users/{user_id}"]["delete"]
    assert operation["summary"] == "Erase everything stored about a user"
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErasureOut")
    erased = schema["components"]["schemas"]["ErasureOut"]["properties"]["erased"]
    assert erased["type"] == "object" and erased["additionalProperties"] == {"type": "integer"}
