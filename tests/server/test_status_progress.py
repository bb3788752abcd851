"""``GET /v1/status``: what waits for vectors, the embedding job's progress, the search tokenizer (issue 17)."""

from __future__ import annotations

from omoide.sample_data import discord_export_paths
from omoide.workers.progress import ProgressRecorder

from .conftest import WS_A


async def test_status_says_what_waits_and_how_fast_the_job_goes(client, tenants, memory):
    h = tenants.ha
    export = next(p for p in discord_export_paths() if "random" in p.name)
    imported = await client.post(
        "/v1/imports", headers=h, params={"filename": export.name}, content=export.read_bytes()
    )
    assert imported.status_code == 201, imported.text
    chunks = imported.json()["chunks"]

    status = (await client.get("/v1/status", headers=h)).json()
    assert status["workspace_id"] == WS_A
    assert status["embedder"] == memory.embedder.model_id
    assert status["chunks_to_embed"] == chunks > 0
    assert status["search_tokenizer"] in {"sudachi-core:v3", "ngram:v2"}
    assert status["lexical_index_tokenizer"] == status["search_tokenizer"]
    assert status["embedding_job"] is None

    recorder = ProgressRecorder(memory.store, job="embedder", model=memory.embedder.model_id)
    recorder.set_total(chunks)
    await memory.knowledge.embed(on_chunks=recorder.advance)
    await recorder.flush()
    job = (await client.get("/v1/status", headers=h)).json()["embedding_job"]
    assert job["running"] is True and job["model"] == memory.embedder.model_id and job["rate"] > 0
    assert job["workspace_eta_seconds"] == 0  # nothing of this workspace waits any more
    assert set(job) == {
        "running",
        "model",
        "rate",
        "workspace_eta_seconds",
        "started_at",
        "updated_at",
    }  # no counts of other workspaces
    recorder.finish()
    await recorder.flush()
    status = (await client.get("/v1/status", headers=tenants.hb)).json()
    assert status["chunks_to_embed"] == 0 and status["embedding_job"]["running"] is False
