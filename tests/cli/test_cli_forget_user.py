"""``omoide forget-user``: the prompt says what goes, the erasure is ``Memory.forget_user``'s,
and the output is its receipt (real SQLite file, real command)."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from omoide import Memory, Message
from omoide.cli import app

runner = CliRunner()
WHO = ["--workspace", "g1", "--user", "u1"]


@pytest.fixture(autouse=True)
def _hashing(monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")


def _key(mem: Memory, user: str):
    return mem.session_key(platform="discord", workspace="g1", channel="c1", user=user)


def _plant(url: str) -> None:
    async def main() -> None:
        async with Memory.open(database_url=url, embedder="hashing") as mem:
            for user in ("u1", "u2"):
                await mem.remember(f"{user} の誕生日は3月15日", workspace="g1", user=user)
                await mem.append(_key(mem, user), Message.user("こんにちは", author_id=user))

    asyncio.run(main())


def _stored(url: str, user: str) -> tuple[int, int]:
    """(memories, session messages) of ``user`` in g1."""

    async def main() -> tuple[int, int]:
        async with Memory.open(database_url=url, embedder="hashing") as mem:
            return len(await mem.memories.list("g1", user)), len(await mem.history(_key(mem, user)))

    return asyncio.run(main())


def test_the_prompt_names_everything_and_no_erases_nothing(sqlite_url):
    _plant(sqlite_url)
    result = runner.invoke(app, ["forget-user", *WHO, "--db", sqlite_url], input="n\n")
    assert result.exit_code == 1 and "Aborted" in result.stderr
    prompt = " ".join(result.stderr.split())
    for what in ("memories", "sessions", "every message", "long-term knowledge", "summaries", "transcripts"):
        assert what in prompt, what
    assert "u1" in prompt and "g1" in prompt and "cannot be undone" in prompt
    assert "Erase" not in result.stdout  # the prompt goes to stderr (stdout only echoes the typed answer)
    assert _stored(sqlite_url, "u1") == (1, 1)

    # --json does not skip the question: with nobody to answer it, nothing is erased
    result = runner.invoke(app, ["forget-user", *WHO, "--db", sqlite_url, "--json"], input="")
    assert result.exit_code == 1 and not result.stdout.strip()
    assert _stored(sqlite_url, "u1") == (1, 1)


def test_yes_erases_the_user_and_prints_the_receipt(sqlite_url):
    _plant(sqlite_url)
    result = runner.invoke(app, ["forget-user", *WHO, "--db", sqlite_url], input="y\n")
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()[1:]  # after the echoed answer
    assert lines[0] == "Erased user u1 in workspace g1:"
    counts = {" ".join(line.split()[:-1]): int(line.split()[-1].replace(",", "")) for line in lines[1:]}
    assert counts["memories"] == 1 and counts["sessions"] == 1 and counts["messages"] == 1
    assert _stored(sqlite_url, "u1") == (0, 0)
    assert _stored(sqlite_url, "u2") == (1, 1)  # another user keeps theirs

    # again, scripted: the receipt as JSON, every kind at zero
    result = runner.invoke(app, ["forget-user", *WHO, "--db", sqlite_url, "--yes", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    erased = json.loads(result.stdout)
    assert {k.replace("_", " ") for k in erased} == set(counts) and set(erased.values()) == {0}
    result = runner.invoke(app, ["forget-user", *WHO, "--db", sqlite_url, "-y"])
    assert result.stdout.startswith("Nothing was stored about user u1 in workspace g1: nothing erased.")


def test_help_says_what_is_erased_with_an_example():
    result = runner.invoke(app, ["forget-user", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "Example: omoide forget-user" in text
    for what in ("memories", "sessions", "long-term knowledge", "summaries", "transcripts"):
        assert what in text, what
