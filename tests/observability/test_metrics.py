"""/metrics: off by default, behind a key when one is set; requests by route template and status,
operation latency, queue depths from the store, worker runs, provider calls and tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from omoide import Memory
from omoide.errors import ProviderUnavailable
from omoide.models import Message
from omoide.observability.metrics import Metrics, active_metrics, metrics_installed
from omoide.observability.providers import instrument_provider
from omoide.providers.scripted import ScriptedChatModel
from omoide.server import create_app
from omoide.workers.runner import Job, WorkerRunner

from .conftest import Keys


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``(sample name, sorted labels) -> value`` of a Prometheus text page."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_metrics_are_off_by_default(client: httpx.AsyncClient):
    got = await client.get("/metrics")
    assert got.status_code == 404 and "OMOIDE_METRICS_ENABLED" in got.json()["detail"]
    assert active_metrics() is None


async def test_requests_operations_and_queues(metrics_client: tuple[Memory, httpx.AsyncClient]):
    mem, client = metrics_client
    key = (await mem.api_keys.create("ws-m", name="m")).token
    h = {"Authorization": f"Bearer {key}"}
    for i in range(3):
        sent = await client.post(
            "/v1/sessions/messages",
            headers=h,
            json={
                "session": {"platform": "discord", "channel": "c1", "user": "7"},
                "text": f"明日の勉強会は{i + 10}時から",
                "author_id": "7",
                "message_id": f"m{i}",
            },
        )
        assert sent.status_code == 201, sent.text
    assert (await client.post("/v1/search", headers=h, json={"query": "勉強会"})).status_code == 200
    assert (await client.post("/v1/users/7/memories", headers=h, json={"content": "紅茶が好き"})).status_code == 201
    assert (await client.get("/v1/users/7/memories/999999", headers=h)).status_code == 404
    assert (await client.post("/v1/users/7/memories/recall", headers=h, json={"query": "紅茶"})).status_code == 200
    assert (await client.get("/no/such/path")).status_code == 404
    assert (await client.get("/ui/login")).status_code == 200  # a page of the inspector (a mounted app)

    page = await client.get("/metrics")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    got = samples(page.text)
    route = "/v1/users/{user_id}/memories/{memory_id}"
    assert got[("omoide_http_requests_total", (("method", "GET"), ("route", route), ("status", "404")))] == 1
    assert (
        got[("omoide_http_requests_total", (("method", "POST"), ("route", "/v1/sessions/messages"), ("status", "201")))]
        == 3
    )
    assert got[("omoide_http_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))] == 1
    assert got[("omoide_http_requests_total", (("method", "GET"), ("route", "/ui/login"), ("status", "200")))] == 1
    assert not any("999999" in str(labels) or "/7/" in str(labels) for _, labels in got)  # templates, not ids
    assert got[("omoide_operation_seconds_count", (("operation", "search"),))] == 1
    assert got[("omoide_operation_seconds_count", (("operation", "append"),))] == 3
    # the memory service measures recall itself: the request middleware does not count it twice
    assert got[("omoide_operation_seconds_count", (("operation", "recall"),))] == 1
    assert got[("omoide_queue_depth", (("queue", "unarchived"),))] == 3
    assert got[("omoide_queue_depth", (("queue", "unembedded"),))] == 0
    assert got[("omoide_queue_depth", (("queue", "unsummarised"),))] >= 1  # channel c1 (and user 7) had messages
    assert ("omoide_http_request_seconds_bucket", (("le", "0.005"), ("method", "POST"), ("route", "/v1/search"))) in got


async def test_metrics_key_is_required_when_set(obs_settings: Any):
    from pydantic import SecretStr

    on = obs_settings.model_copy(update={"metrics_enabled": True, "metrics_key": SecretStr("scrape-" + "k" * 20)})
    async with Memory.open(on) as mem:
        app = create_app(mem, workers=False)
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
                assert (await c.get("/metrics")).status_code == 401
                assert (await c.get("/metrics", headers={"Authorization": "Bearer wrong"})).status_code == 401
                ok = await c.get("/metrics", headers={"Authorization": "Bearer scrape-" + "k" * 20})
                assert ok.status_code == 200 and "omoide_http_requests_total" in ok.text
        finally:
            from omoide.observability.metrics import install_metrics

            install_metrics(None)


async def test_each_app_has_its_own_registry(obs_settings: Any):
    a, b = Metrics(), Metrics()
    a.requests.labels(method="GET", route="/x", status="200").inc()
    assert "omoide_http_requests_total{" in a.render().decode()
    assert "omoide_http_requests_total{" not in b.render().decode()


async def test_worker_runs_and_failures_are_counted():
    from omoide.errors import StoreUnavailable

    class Report:
        idle = False
        retry_later = False

        def as_log(self) -> dict[str, Any]:
            return {"duration_ms": 1.0}

    calls = 0

    async def flaky(stop: asyncio.Event) -> Report:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StoreUnavailable("database is down")
        if calls >= 3:
            runner.stop()
        return Report()

    runner = WorkerRunner([Job("archiver", 0.001, flaky, max_backoff=0.002)], shutdown_timeout=1)
    with metrics_installed(Metrics()) as m:
        await asyncio.wait_for(runner.run(), 10)
        got = samples(m.render().decode())
    assert got[("omoide_worker_job_runs_total", (("job", "archiver"), ("outcome", "failed")))] == 1
    assert got[("omoide_worker_job_runs_total", (("job", "archiver"), ("outcome", "ok")))] >= 2
    assert got[("omoide_worker_job_failures_total", (("code", "STORE_UNAVAILABLE"), ("job", "archiver")))] == 1
    assert got[("omoide_worker_job_seconds_count", (("job", "archiver"),))] >= 3


async def test_provider_calls_latency_errors_and_tokens(obs_settings: Any):
    script = ["答えです。", ProviderUnavailable("503 from upstream", provider="scripted")]
    chat = instrument_provider(ScriptedChatModel(script), "llm")
    with metrics_installed(Metrics()) as m:
        async with Memory.open(obs_settings, chat_model=chat) as mem:
            embedder = instrument_provider(mem.embedder, "embedder")
            await embedder.embed_documents(["一つ目", "二つ目"])
            await embedder.embed_query("質問")
            done = await chat.complete([_user("こんにちは")])
            with pytest.raises(ProviderUnavailable):
                await chat.complete([_user("もう一度")])
        got = samples(m.render().decode())
    model = embedder.model_id
    assert instrument_provider(embedder, "embedder") is embedder  # never wrapped twice
    assert got[("omoide_provider_embedded_texts_total", (("model", model),))] == 3
    assert (
        got[
            (
                "omoide_provider_call_seconds_count",
                (("call", "embed_documents"), ("model", model), ("role", "embedder")),
            )
        ]
        == 1
    )
    assert (
        got[("omoide_provider_call_seconds_count", (("call", "complete"), ("model", "scripted"), ("role", "llm")))] == 2
    )
    assert (
        got[
            (
                "omoide_provider_call_errors_total",
                (("code", "PROVIDER_UNAVAILABLE"), ("model", "scripted"), ("role", "llm")),
            )
        ]
        == 1
    )
    assert got[("omoide_provider_tokens_total", (("kind", "output"), ("model", "scripted")))] == len(done.text)


def _user(text: str) -> Any:
    from omoide.models import Message, TextBlock

    return Message("user", (TextBlock(text),))


@pytest.fixture(autouse=True)
def _no_metrics_left() -> Any:
    yield
    assert active_metrics() is None, "a test left its metrics installed"


async def test_keys_fixture_is_usable(keys: Keys):
    assert keys.a != keys.b


async def test_instrumented_providers_serve_the_whole_engine(obs_settings: Any):
    """What the engine does once it wraps its providers (the one change asked of engine.py): remember,
    recall, archive + embed, search and ask all run through the wrappers, and are measured."""
    on = obs_settings.model_copy(update={"metrics_enabled": True, "min_session_chars": 1})
    async with Memory.open(on, chat_model=instrument_provider(ScriptedChatModel(lambda r: "答え [#1]"), "llm")) as mem:
        mem._embedder = instrument_provider(mem.embedder, "embedder")  # what Memory.embedder would build
        with metrics_installed(Metrics()) as m:
            await mem.remember("私の誕生日は3月15日です", workspace="g1", user="u1")
            assert (await mem.recall("誕生日", workspace="g1", user="u1"))[0].memory.content.startswith("私の誕生日")
            key = mem.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
            await mem.append(key, Message.user("来週の勉強会は水曜日の19時から", author_id="u1"))
            await mem.knowledge.archive(now=True)
            await mem.knowledge.embed()
            assert (await mem.search("勉強会", workspace="g1")).hits
            assert (await mem.ask("勉強会はいつ？", workspace="g1")).text
            got = samples(m.render().decode())
    calls = {labels: v for (name, labels), v in got.items() if name == "omoide_provider_call_seconds_count"}
    by_call = {dict(labels)["call"]: v for labels, v in calls.items()}
    assert by_call["embed_documents"] >= 2 and by_call["embed_query"] >= 2 and by_call["complete"] >= 1
