"""What the HTTP API needed from the library, tested on ``Memory`` directly (both backends):
per-workspace status and imports restricted to one workspace."""

from __future__ import annotations

import pytest

from omoide.errors import InvalidInput
from omoide.models import Message
from omoide.sample_data import discord_export_paths

from .conftest import WS_A


async def test_knowledge_status_of_one_workspace(memory):
    for ws, n in (("w1", 3), ("w2", 1)):
        for i in range(n):
            key = memory.session_key(platform="api", workspace=ws, channel=f"c{i}", user="u")
            await memory.append(key, Message.user(f"{ws} message {i}"))
    every, w1, w2, none = (
        await memory.knowledge.status(),
        await memory.knowledge.status(workspace="w1"),
        await memory.knowledge.status(workspace="w2"),
        await memory.knowledge.status(workspace="nobody"),
    )
    assert sum(every.sessions.values()) == 4
    assert (sum(w1.sessions.values()), w1.unarchived_messages) == (3, 3)
    assert (sum(w2.sessions.values()), w2.unarchived_messages) == (1, 1)
    assert sum(none.sessions.values()) == 0 and none.chunks == 0 and set(none.sessions) == set(every.sessions)


async def test_import_only_into_one_workspace(memory):
    export = next(p for p in discord_export_paths() if "random" in p.name)  # guild WS_A
    with pytest.raises(InvalidInput, match="workspace"):
        await memory.knowledge.import_export(export, workspace="other", only_workspace=True)
    assert (await memory.knowledge.status()).chunks == 0
    with pytest.raises(InvalidInput):
        await memory.knowledge.import_export(export, only_workspace=True)  # which workspace?
    done = await memory.knowledge.import_export(export, workspace=WS_A, only_workspace=True)
    assert done.chunks > 0 and (await memory.knowledge.status(workspace=WS_A)).chunks == done.chunks
