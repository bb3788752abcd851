"""ApiKeyStore conformance on SQLite and PostgreSQL (and ``Memory.api_keys`` over it)."""

from __future__ import annotations

import asyncio

import pytest

from omoide.apikeys import ApiKeyDraft, ApiKeyService, hash_token
from omoide.errors import ConflictError, InvalidInput, NotFoundError
from omoide.stores.api_keys import ApiKeyStore


def _draft(workspace: str = "g1", token: str = "omk_test", name: str = "bot") -> ApiKeyDraft:
    return ApiKeyDraft(workspace, name, token[:12], hash_token(token))


async def test_protocol_and_migration(store):
    assert isinstance(store.api_keys, ApiKeyStore)
    assert await store.api_keys.list_api_keys() == []


async def test_insert_lookup_list_revoke(store):
    a = await store.api_keys.insert_api_key(_draft("g1", "omk_a"))
    b = await store.api_keys.insert_api_key(_draft("g2", "omk_b", name=""))
    assert (a.workspace_id, a.name, a.prefix, a.active) == ("g1", "bot", "omk_a", True)
    assert a.created_at.tzinfo is not None and a.revoked_at is None
    found = await store.api_keys.get_api_key_by_hash(hash_token("omk_a"))
    assert found is not None and found[0] == a and found[1] == hash_token("omk_a")
    assert await store.api_keys.get_api_key_by_hash(hash_token("omk_nope")) is None
    assert await store.api_keys.get_api_key(a.id) == a
    assert await store.api_keys.get_api_key(999_999) is None
    assert [k.id for k in await store.api_keys.list_api_keys()] == [b.id, a.id]
    assert [k.id for k in await store.api_keys.list_api_keys(workspace_id="g1")] == [a.id]
    assert [k.id for k in await store.api_keys.list_api_keys(limit=1, offset=1)] == [a.id]

    revoked = await store.api_keys.revoke_api_key(a.id)
    assert revoked is not None and not revoked.active and revoked.revoked_at is not None
    again = await store.api_keys.revoke_api_key(a.id)
    assert again is not None and again.revoked_at == revoked.revoked_at  # the first time is kept
    assert await store.api_keys.revoke_api_key(999_999) is None
    assert [k.id for k in await store.api_keys.list_api_keys(include_revoked=False)] == [b.id]
    found = await store.api_keys.get_api_key_by_hash(hash_token("omk_a"))
    assert found is not None and not found[0].active


async def test_duplicate_hash_is_a_conflict(store):
    await store.api_keys.insert_api_key(_draft(token="omk_same"))
    with pytest.raises(ConflictError):
        await store.api_keys.insert_api_key(_draft("g2", token="omk_same"))


async def test_bad_input_is_rejected(store):
    with pytest.raises(InvalidInput):
        await store.api_keys.insert_api_key(ApiKeyDraft("", "x", "omk_", hash_token("omk_x")))
    with pytest.raises(InvalidInput):
        await store.api_keys.insert_api_key(ApiKeyDraft("g1", "x", "omk_", "not-a-hash"))
    with pytest.raises(InvalidInput):
        await store.api_keys.get_api_key_by_hash("omk_plaintext")
    with pytest.raises(InvalidInput):
        await store.api_keys.revoke_api_key(0)
    with pytest.raises(InvalidInput):
        await store.api_keys.list_api_keys(limit=-1)


async def test_service_create_verify_revoke(store):
    keys = ApiKeyService(store.api_keys)
    created = await keys.create("g1", name="discord-bot")
    assert created.token.startswith("omk_") and len(created.token) == 47
    assert created.record.prefix == created.token[:12]
    record = await keys.verify(created.token)
    assert record is not None and record.workspace_id == "g1" and record.id == created.record.id
    for bad in (None, "", "omk_", created.token + "x", created.token[4:], "Bearer " + created.token, "x" * 500):
        assert await keys.verify(bad) is None
    other = await keys.create(42)
    assert other.record.workspace_id == "42" and other.token != created.token
    assert [k.id for k in await keys.list(workspace="g1")] == [created.record.id]
    await keys.revoke(created.record.id)
    assert await keys.verify(created.token) is None
    assert (await keys.verify(other.token)) is not None
    with pytest.raises(NotFoundError):
        await keys.revoke(123_456)
    with pytest.raises(NotFoundError):
        await keys.get(123_456)
    with pytest.raises(InvalidInput):
        await keys.create("   ")
    with pytest.raises(InvalidInput):
        await keys.create("g1", name="n" * 101)
    with pytest.raises(InvalidInput):
        await keys.list(limit=0)


async def test_concurrent_creates(store):
    keys = ApiKeyService(store.api_keys)
    made = await asyncio.gather(*(keys.create("g1", name=f"k{i}") for i in range(10)))
    assert len({m.record.id for m in made}) == 10
    assert all([await keys.verify(m.token) for m in made])


async def test_service_cache(store):
    now = [100.0]
    keys = ApiKeyService(store.api_keys, cache_seconds=5, clock=lambda: now[0])
    a, b = await keys.create("g1"), await keys.create("g1")
    assert await keys.verify(a.token) is not None and await keys.verify(b.token) is not None
    await keys.revoke(a.record.id)  # through the service: at once
    assert await keys.verify(a.token) is None
    await store.api_keys.revoke_api_key(b.record.id)  # elsewhere (another process): within cache_seconds
    assert await keys.verify(b.token) is not None
    now[0] += 5.1
    assert await keys.verify(b.token) is None
