"""EmbeddingProcessor on both backends: pending → processing → ready/failed, retries, leases, reindex."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from omoide import Memory
from omoide.errors import AuthenticationFailed, BadRequest, ProviderUnavailable, RateLimited
from omoide.knowledge.embedding import EmbeddingProcessor, content_hash
from omoide.providers.local.hashing import HashingEmbedder
from omoide.stores.knowledge import SourceStatus
from omoide.text.chat_lines import chunk_embedding_text

from .helpers import FlakyEmbedder, all_sources, later, talk, tuned


async def archived_memory(mem: Memory, sessions: int = 3, messages: int = 12) -> None:
    for i in range(sessions):
        key = mem.session_key(platform="discord", workspace="111", channel="222", user=f"u{i}")
        await talk(mem, key, messages, user=f"u{i}")
    report = await mem.knowledge.archive(at=later())
    assert report.archived == sessions


async def statuses(mem: Memory) -> list[SourceStatus]:
    return [s.status for s in sorted(await all_sources(mem.store), key=lambda s: s.id)]


async def test_pending_sources_are_embedded_and_become_ready(mem: Memory):
    await archived_memory(mem)
    seen: list[int] = []
    report = await mem.knowledge.embed(on_chunks=seen.append)
    status = await mem.knowledge.status()
    assert report.claimed == 3 and report.ready == 3 and report.failed == 0
    assert report.chunks == status.chunks == sum(seen)
    assert await statuses(mem) == [SourceStatus.READY] * 3
    assert status.embedded == {mem.embedder.model_id: status.chunks}
    # the stored vector is the embedder's vector of the chunk's lines as "speaker: text"
    source = (await mem.knowledge.sources())[0]
    chunk = (await mem.store.knowledge.chunks_of_source(source.id))[0]
    stored = await mem.store.knowledge.get_embedding(chunk.id, model=mem.embedder.model_id)
    plain = chunk_embedding_text(chunk.content)
    assert plain and "**" not in plain and plain != chunk.content
    expected = (await mem.embedder.embed_documents([plain]))[0]
    assert stored is not None
    assert np.allclose(stored, expected, atol=1e-3)  # halfvec on PostgreSQL
    # a second pass finds nothing to do
    again = await mem.knowledge.embed()
    assert again.idle


async def test_batches_span_sources(mem: Memory):
    await archived_memory(mem, sessions=4)
    embedder = FlakyEmbedder()
    processor = EmbeddingProcessor(mem.store.knowledge, embedder, tuned(mem.settings, embed_batch_size=5))
    report = await processor.run()
    total = (await mem.knowledge.status()).chunks
    assert report.chunks == total
    # five chunks per provider call, each sent with its unit texts (one per line)
    lines = [
        len(chunk.location["lines"])
        for source in sorted(await all_sources(mem.store), key=lambda s: s.id)
        for chunk in await mem.store.knowledge.chunks_of_source(source.id)
    ]
    assert report.units == sum(lines)
    assert embedder.calls == [len(lines[i : i + 5]) + sum(lines[i : i + 5]) for i in range(0, total, 5)]


async def test_the_vector_index_is_created_for_the_model(mem: Memory):
    await archived_memory(mem, sessions=1)
    report = await mem.knowledge.embed()
    if mem.store.backend == "postgresql":
        assert report.index_created
        again = EmbeddingProcessor(mem.store.knowledge, mem.embedder, mem.settings)
        assert await again.ensure_index() is False  # already there
    else:
        assert not report.index_created  # exact search with numpy: no index to build


async def test_transient_errors_back_off_then_fail_after_the_attempts_cap(settings):
    async with Memory.open(tuned(settings, embedder="hashing", embed_max_attempts=2)) as mem:
        await archived_memory(mem, sessions=2)
        embedder = FlakyEmbedder(failures=[RateLimited("slow down", provider="flaky", retry_after=1.0)])
        processor = EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings)
        report = await processor.run()
        assert report.retry_later and "RateLimited: slow down" in (report.transient_error or "")
        assert report.retried == 2 and report.ready == 0
        sources = await all_sources(mem.store)
        assert {s.status for s in sources} == {SourceStatus.PENDING}
        assert all(s.error and "slow down" in s.error for s in sources)
        # second claim, second transient error: out of attempts → failed, with the error
        embedder.failures = [ProviderUnavailable("503 from upstream", provider="flaky")]
        report = await processor.run()
        assert report.failed == 2
        for source in await all_sources(mem.store):
            assert source.status is SourceStatus.FAILED
            assert source.attempts == 2
            assert "gave up after 2 attempts" in (source.error or "")
            assert "503 from upstream" in (source.error or "")


async def test_a_transient_error_then_success(mem: Memory):
    await archived_memory(mem, sessions=2)
    embedder = FlakyEmbedder(failures=[ProviderUnavailable("timeout", provider="flaky")])
    processor = EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings)
    assert (await processor.run()).retry_later
    report = await processor.run()
    assert report.ready == 2 and not report.retry_later
    assert all(s.status is SourceStatus.READY and s.error is None for s in await all_sources(mem.store))


async def test_a_permanent_error_fails_only_its_source(mem: Memory):
    for i, text in enumerate(["普通の会話です", "POISON が入った会話", "もう一つの普通の会話"]):
        key = mem.session_key(platform="discord", workspace="111", channel="222", user=f"u{i}")
        await talk(mem, key, 6, user=f"u{i}")
        from omoide import Message

        await mem.append(key, Message.user(text * 3, author_id=f"u{i}"))
    await mem.knowledge.archive(at=later())
    embedder = FlakyEmbedder(
        poison="POISON", poison_error=BadRequest("input rejected", provider="flaky", status_code=400)
    )
    report = await EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings).run()
    assert (report.ready, report.failed) == (2, 1)
    by_title = {s.metadata["origin_session_key"]: s for s in await all_sources(mem.store)}
    poisoned = next(s for k, s in by_title.items() if k.endswith("u=u1"))
    assert poisoned.status is SourceStatus.FAILED
    assert "BadRequest: input rejected" in (poisoned.error or "")
    assert sum(s.status is SourceStatus.READY for s in by_title.values()) == 2


async def test_bad_credentials_fail_no_source(mem: Memory):
    await archived_memory(mem, sessions=2)
    embedder = FlakyEmbedder(failures=[AuthenticationFailed("bad key", provider="flaky", status_code=401)])
    with pytest.raises(AuthenticationFailed):
        await EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings).run()
    sources = await all_sources(mem.store)
    assert {s.status for s in sources} == {SourceStatus.PENDING}
    assert all("bad key" in (s.error or "") for s in sources)


async def test_a_crashed_workers_claim_is_reclaimed_after_the_lease(settings):
    async with Memory.open(tuned(settings, embedder="hashing", embed_lease_seconds=0.2)) as mem:
        await archived_memory(mem, sessions=2)
        claimed = await mem.store.knowledge.claim_sources(limit=10, lease_seconds=0.2)  # a worker that then died
        assert len(claimed) == 2
        assert (await mem.knowledge.embed()).idle  # the lease still runs
        await asyncio.sleep(0.3)
        report = await mem.knowledge.embed()
        assert report.claimed == 2 and report.ready == 2
        assert all(s.attempts == 2 for s in await all_sources(mem.store))


async def test_a_source_that_keeps_killing_workers_is_failed(settings):
    async with Memory.open(tuned(settings, embedder="hashing", embed_lease_seconds=0.01, embed_max_attempts=2)) as mem:
        await archived_memory(mem, sessions=1)
        for _ in range(2):  # two workers claimed it and died
            assert await mem.store.knowledge.claim_sources(limit=10, lease_seconds=0.01)
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.02)
        report = await mem.knowledge.embed()
        assert report.failed == 1
        (source,) = await all_sources(mem.store)
        assert source.status is SourceStatus.FAILED
        assert "never finished" in (source.error or "")


async def test_stop_hands_unfinished_sources_back(settings):
    async with Memory.open(tuned(settings, embedder="hashing", embed_batch_size=2)) as mem:
        await archived_memory(mem, sessions=3)
        stop = asyncio.Event()

        class StopsAfterOneBatch(FlakyEmbedder):
            async def embed_documents(self, texts):  # type: ignore[no-untyped-def]
                stop.set()  # SIGTERM arrives while this batch is being embedded
                return await super().embed_documents(texts)

        report = await EmbeddingProcessor(mem.store.knowledge, StopsAfterOneBatch(), mem.settings).run(stop=stop)
        assert report.stopped and report.chunks == 2 and report.released == 3
        assert {s.status for s in await all_sources(mem.store)} == {SourceStatus.PENDING}
        # the next worker finishes the job without redoing the stored batch
        embedder = FlakyEmbedder()
        report = await EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings).run()
        assert report.ready == 3
        assert report.chunks == (await mem.knowledge.status()).chunks - 2


async def test_reindex_embeds_everything_for_a_new_model_beside_the_old_one(mem: Memory):
    await archived_memory(mem, sessions=2)
    await mem.knowledge.embed()
    old = mem.embedder.model_id
    source = (await mem.knowledge.sources())[0]
    chunk = (await mem.store.knowledge.chunks_of_source(source.id))[0]
    before = await mem.store.knowledge.get_embedding(chunk.id, model=old)
    report = await mem.knowledge.reindex("hashing@64")
    status = await mem.knowledge.status()
    assert report.model == "hashing:v1@64"
    assert status.embedded == {old: status.chunks, "hashing:v1@64": status.chunks}
    after = await mem.store.knowledge.get_embedding(chunk.id, model=old)
    assert before is not None and after is not None and np.array_equal(before, after)  # old vectors untouched
    new = await mem.store.knowledge.get_embedding(chunk.id, model="hashing:v1@64")
    assert new is not None and new.shape == (64,)
    assert (await mem.knowledge.reindex("hashing@64")).chunks == 0  # nothing left: resumable and idempotent
    if mem.store.backend == "postgresql":
        assert report.index_created


async def test_search_serves_the_old_model_during_and_after_a_reindex(settings):
    async with Memory.open(tuned(settings, embedder="hashing", embed_batch_size=4)) as mem:
        await _reindex_while_searching(mem, settings)


async def _reindex_while_searching(mem: Memory, settings) -> None:
    from omoide.providers.registry import build

    await archived_memory(mem, sessions=3, messages=20)
    await mem.knowledge.embed()
    old = mem.embedder.model_id
    query = "message 7"
    baseline = await mem.search(query, workspace="111", mode="vector", k=5)
    assert baseline.hits and not baseline.fallback

    # interrupt the reindex after its first batch: half the chunks have a new vector
    new_embedder = build("embedder", "hashing@64", mem.settings)
    stop = asyncio.Event()
    partial = await mem.knowledge.embedding_processor(new_embedder).backfill(
        stop=stop, on_chunks=lambda n: stop.set(), create_index=False
    )
    status = await mem.knowledge.status()
    assert 0 < partial.chunks < status.chunks
    during = await mem.search(query, workspace="111", mode="vector", k=5)
    assert [h.chunk.chunk_id for h in during.hits] == [h.chunk.chunk_id for h in baseline.hits]
    assert not during.fallback and not during.notes

    await mem.knowledge.reindex(new_embedder)  # resumes where it stopped
    after = await mem.search(query, workspace="111", mode="vector", k=5)
    assert [h.chunk.chunk_id for h in after.hits] == [h.chunk.chunk_id for h in baseline.hits]
    assert (await mem.knowledge.status()).embedded == {old: status.chunks, "hashing:v1@64": status.chunks}

    # switching OMOIDE_EMBEDDER serves the new vectors at once
    async with Memory.open(tuned(settings, embedder="hashing@64")) as switched:
        result = await switched.search(query, workspace="111", mode="vector", k=5)
        assert result.hits and not result.fallback and not result.notes


async def test_backfill_skips_chunks_the_provider_refuses(mem: Memory):
    key = mem.session_key(platform="discord", workspace="111", channel="222", user="u1")
    await talk(mem, key, 4)
    from omoide import Message

    await mem.append(key, Message.user("POISON " * 10, author_id="u1"))
    await mem.knowledge.archive(at=later())
    embedder = FlakyEmbedder(poison="POISON", poison_error=BadRequest("too long", provider="flaky", status_code=400))
    report = await EmbeddingProcessor(mem.store.knowledge, embedder, mem.settings).backfill()
    status = await mem.knowledge.status()
    assert report.skipped == 1
    assert report.chunks == status.chunks - 1


async def test_unknown_reindex_model_is_a_config_error(mem: Memory):
    from omoide.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown provider"):
        await mem.knowledge.reindex("no-such-embedder:x")


def test_content_hash_names_its_algorithm():
    assert content_hash("abc").startswith("b2:")
    assert content_hash("abc") != content_hash("abd")


def test_the_hashing_embedder_is_the_test_embedder():
    assert HashingEmbedder(64).model_id == "hashing:v1@64"


async def test_a_source_whose_claims_never_finish_is_given_up_not_retried_forever(mem: Memory):
    """A poison pill that kills every worker claiming it: after embed_max_attempts dead claims it fails."""
    await archived_memory(mem, sessions=1)
    (source,) = await mem.knowledge.sources()
    s = tuned(mem.settings, embed_max_attempts=2, embed_lease_seconds=0.01)
    for _ in range(2):  # two workers claimed it and died
        await asyncio.sleep(0.02)  # their lease ran out
        assert await mem.store.knowledge.claim_sources(limit=10, lease_seconds=0.01) == [source.id]
    await asyncio.sleep(0.02)
    report = await EmbeddingProcessor(mem.store.knowledge, mem.embedder, s).run()
    assert report.failed == 1
    (failed,) = await mem.knowledge.sources()
    assert failed.status is SourceStatus.FAILED
    assert "gave up after 2 claims that never finished" in (failed.error or "")


async def test_a_live_workers_claim_is_kept_past_the_lease(settings):
    """A round that takes longer than the lease (a large source, a slow or rate-limited provider) keeps
    its claim: another worker does not take the source over, embed it again and count an attempt."""
    lease = 2.0
    async with Memory.open(tuned(settings, embedder="hashing", embed_lease_seconds=lease)) as mem:
        await archived_memory(mem, sessions=2)
        started, gate = asyncio.Event(), asyncio.Event()

        class Slow(FlakyEmbedder):
            async def embed_documents(self, texts):  # type: ignore[no-untyped-def]
                started.set()
                await gate.wait()  # one long provider call
                return await super().embed_documents(texts)

        worker = asyncio.create_task(EmbeddingProcessor(mem.store.knowledge, Slow(), mem.settings).run())
        await asyncio.wait_for(started.wait(), timeout=60)
        loop = asyncio.get_running_loop()
        until = loop.time() + 2.5 * lease  # well past the lease of the claim
        while loop.time() < until:
            await asyncio.sleep(0.1)
        other = await mem.store.knowledge.claim_sources(limit=10, lease_seconds=lease)  # a second worker
        gate.set()
        report = await asyncio.wait_for(worker, timeout=60)
        assert other == []
        assert report.ready == 2
        sources = await all_sources(mem.store)
        assert {s.status for s in sources} == {SourceStatus.READY}
        assert all(s.attempts == 1 for s in sources)
