"""The library's own entry points are traced: ``Memory.append`` / ``search`` / ``ask`` each make one span
with the workspace, and the providers the engine builds from its settings are instrumented (their calls
are spans too) — never the message, the query or the answer; memory changes record who made them."""

from __future__ import annotations

from typing import Any

from omoide import Memory
from omoide.models import Message
from omoide.observability.providers import InstrumentedEmbedder

from .test_tracing import SECRET, all_values


async def test_append_search_and_ask_are_spans_with_the_workspace_only(spans: Any, memory: Memory):
    key = memory.session_key(platform="discord", workspace="g1", channel="c1", user="u1")
    await memory.append(key, Message.user(f"the meeting is in Sapporo {SECRET}"))
    await memory.append(str(key), Message.user("and the venue is booked"))
    await memory.knowledge.archive(now=True)
    await memory.knowledge.embed()
    spans.clear()
    assert isinstance(memory.embedder, InstrumentedEmbedder)  # built from the settings: instrumented
    await memory.search(f"Sapporo {SECRET}", workspace="g1")
    await memory.ask(f"Where is the meeting? {SECRET}", workspace="g1")
    finished = spans.get_finished_spans()
    names = [s.name for s in finished]
    assert names.count("omoide.search") == 1 and names.count("omoide.ask") == 1
    assert "omoide.provider.embed_query" in names  # the engine's embedder, through its wrapper
    for s in finished:
        if s.name in ("omoide.search", "omoide.ask"):
            assert s.attributes["omoide.workspace"] == "g1"
    assert not any(SECRET in v for v in all_values(finished))


async def test_a_malformed_key_still_raises_its_own_error(spans: Any, memory: Memory):
    from omoide.errors import InvalidSessionKey

    try:
        await memory.append("not-a-key", Message.user(SECRET))
    except InvalidSessionKey:
        pass
    else:
        raise AssertionError("a malformed key was accepted")
    (done,) = [s for s in spans.get_finished_spans() if s.name == "omoide.append"]
    assert "omoide.workspace" not in (done.attributes or {})
    assert done.status.status_code.name == "ERROR"


async def test_memory_history_names_the_caller(memory: Memory):
    first = await memory.remember("好きな色は青", workspace="g1", user="u1", actor="user:u1")
    await memory.memories.update("g1", "u1", first.memory.id, content="好きな色は緑", actor="cli")
    await memory.memories.delete("g1", "u1", first.memory.id, actor="mcp")
    events = await memory.memories.history("g1", "u1", first.memory.id)
    assert [(e.action, e.actor) for e in events] == [("created", "user:u1"), ("updated", "cli"), ("deleted", "mcp")]
