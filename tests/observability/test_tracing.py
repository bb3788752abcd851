"""OpenTelemetry spans (SDK's InMemorySpanExporter): provider calls, worker jobs, HTTP requests and memory
history reads carry the workspace / job / model — never message text, queries or keys."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from omoide import Memory
from omoide.models import Message, TextBlock
from omoide.observability.providers import instrument_provider
from omoide.observability.tracing import span
from omoide.providers.scripted import ScriptedChatModel
from omoide.workers.runner import Job, WorkerRunner

from .conftest import Keys

SECRET = "合言葉はサクラ-7d1f"


def all_values(finished: Any) -> list[str]:
    out: list[str] = []
    for s in finished:
        out.append(s.name)
        out.extend(f"{k}={v}" for k, v in (s.attributes or {}).items())
        out.extend(str(e.attributes) for e in s.events)
    return out


def test_span_keeps_only_allowed_attributes(spans: Any):
    with span("omoide.search", workspace="g1", mode="hybrid", query=SECRET, text=SECRET, api_key="omk_x") as s:
        s.set(count=3, content=SECRET)
    (done,) = spans.get_finished_spans()
    assert dict(done.attributes) == {"omoide.workspace": "g1", "omoide.mode": "hybrid", "omoide.count": 3}


def test_an_error_marks_the_span_without_its_message(spans: Any):
    from omoide.errors import InvalidInput

    try:
        with span("omoide.append", workspace="g1"):
            raise InvalidInput(f"bad text {SECRET}")
    except InvalidInput:
        pass
    (done,) = spans.get_finished_spans()
    assert done.status.status_code.name == "ERROR"
    assert done.attributes["error.type"] == "InvalidInput" and done.attributes["omoide.error.code"] == "INVALID_INPUT"
    assert not any(SECRET in v for v in all_values([done]))


async def test_provider_spans_name_the_model_not_the_text(spans: Any, memory: Memory):
    chat = instrument_provider(ScriptedChatModel(["はい。"]), "llm")
    embedder = instrument_provider(memory.embedder, "embedder")
    await embedder.embed_documents([SECRET])
    await embedder.embed_query(SECRET)
    [event async for event in chat.stream([Message("user", (TextBlock(SECRET),))])]
    names = [s.name for s in spans.get_finished_spans()]
    assert names == ["omoide.provider.embed_documents", "omoide.provider.embed_query", "omoide.provider.stream"]
    first = spans.get_finished_spans()[0]
    assert first.attributes["omoide.model"] == embedder.model_id and first.attributes["omoide.role"] == "embedder"
    assert first.attributes["omoide.count"] == 1
    assert not any(SECRET in v for v in all_values(spans.get_finished_spans()))


async def test_worker_jobs_are_spans(spans: Any):
    class Idle:
        idle = True
        retry_later = False

        def as_log(self) -> dict[str, Any]:
            return {}

    async def once(stop: asyncio.Event) -> Idle:
        runner.stop()
        return Idle()

    runner = WorkerRunner([Job("embedder", 0.001, once)], shutdown_timeout=1)
    await asyncio.wait_for(runner.run(), 10)
    (job,) = [s for s in spans.get_finished_spans() if s.name == "omoide.worker.embedder"]
    assert job.attributes["omoide.job"] == "embedder" and job.attributes["omoide.outcome"] == "idle"


async def test_http_requests_are_spans_with_the_route_template(spans: Any, client: httpx.AsyncClient, keys: Keys):
    made = await client.post("/v1/users/7/memories", json={"content": SECRET}, headers=keys.ha)
    assert made.status_code == 201
    memory_id = made.json()["memory"]["id"]
    assert (await client.get(f"/v1/users/7/memories/{memory_id}/history", headers=keys.ha)).status_code == 200
    http = [s for s in spans.get_finished_spans() if s.name == "omoide.http"]
    assert [s.attributes["http.route"] for s in http] == [
        "/v1/users/{user_id}/memories",
        "/v1/users/{user_id}/memories/{memory_id}/history",
    ]
    assert [s.attributes["http.response.status_code"] for s in http] == [201, 200]
    values = all_values(spans.get_finished_spans())
    assert not any(SECRET in v or keys.a in v for v in values)


async def test_recall_is_a_span_with_the_workspace_only(spans: Any, memory: Memory):
    await memory.memories.remember("g1", "u1", SECRET)
    spans.clear()
    await memory.memories.recall("g1", "u1", SECRET)
    (recall,) = [s for s in spans.get_finished_spans() if s.name == "omoide.recall"]
    assert dict(recall.attributes) == {"omoide.workspace": "g1", "omoide.count": 1}
    assert not any(SECRET in v for v in all_values(spans.get_finished_spans()))
