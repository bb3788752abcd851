"""``omoide memory …`` and ``omoide forget-user`` as a user runs them (real database, real commands)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from omoide.cli import app

runner = CliRunner()

NOTHING_ELSE = {"chunks_rewritten": 0, "chunks_deleted": 0, "sources_deleted": 0, "transcripts": 0}
"""The receipt's long-term knowledge and transcript counts, when the user had none."""


@pytest.fixture(autouse=True)
def _hashing(monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")


def omoide(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize(
    "command", [["memory", c] for c in ("add", "search", "list", "get", "update", "delete")] + [["forget-user"]]
)
def test_help_has_an_example(command):
    code, out = omoide(*command, "--help")
    assert code == 0 and "Example:" in out and "omoide " in out.split("Example:")[1]


def test_add_search_list_get_update_delete_forget(db_url):
    who = ["--workspace", "g1", "--user", "u1", "--db", db_url]
    code, out = omoide("memory", "add", "誕生日は3月15日", "--tag", "profile", *who, "--json")
    assert code == 0, out
    first = json.loads(out)
    assert first["updated"] is False and first["tags"] == ["profile"]
    code, out = omoide("memory", "add", "誕生日は3月15日。", *who)
    assert code == 0 and "Updated memory" in out
    omoide("memory", "add", "好きな食べ物はラーメン", "--category", "preference", *who)
    code, out = omoide("memory", "search", "誕生日はいつ？", *who, "--json")
    assert json.loads(out)[0]["content"] == "誕生日は3月15日。"
    code, out = omoide("memory", "list", *who, "--category", "preference", "--json")
    assert [m["content"] for m in json.loads(out)] == ["好きな食べ物はラーメン"]
    code, out = omoide("memory", "update", str(first["id"]), "--content", "誕生日は4月2日", *who, "--json")
    assert json.loads(out)["content"] == "誕生日は4月2日"
    code, out = omoide("memory", "get", str(first["id"]), "--workspace", "g1", "--user", "u2", "--db", db_url)
    assert code == 1 and "no memory with id" in out  # another user: not found
    code, out = omoide("memory", "delete", str(first["id"]), *who)
    assert code == 0 and "Deleted" in out
    code, out = omoide("forget-user", *who, "--yes", "--json")
    assert json.loads(out) == {"memories": 1, "sessions": 0, "messages": 0, "summaries": 0, **NOTHING_ELSE}
    code, out = omoide("memory", "list", *who)
    assert "No memories" in out


def test_bad_input_says_what_to_do(db_url):
    code, out = omoide(
        "memory", "add", "x", "--category", "two words", "--workspace", "g1", "--user", "u1", "--db", db_url
    )
    assert code != 0 and "category" in out


def test_update_takes_the_text_positionally_like_add(db_url):
    """``memory add`` takes the text positionally; ``memory update ID TEXT`` was rejected (needed --content)."""
    who = ["--workspace", "g1", "--user", "u1", "--db", db_url]
    code, out = omoide("memory", "add", "誕生日は3月15日", *who, "--json")
    memory_id = str(json.loads(out)["id"])
    code, out = omoide("memory", "update", memory_id, "誕生日は4月2日", *who, "--json")
    assert code == 0, out
    assert json.loads(out)["content"] == "誕生日は4月2日"
    code, out = omoide("memory", "update", memory_id, "--content", "誕生日は5月5日", *who, "--json")  # still works
    assert code == 0 and json.loads(out)["content"] == "誕生日は5月5日"
    code, out = omoide("memory", "update", memory_id, "a", "--content", "b", *who)
    assert code == 2 and "not both" in out
    code, out = omoide("memory", "get", memory_id, *who, "--json")
    assert json.loads(out)["content"] == "誕生日は5月5日"


def test_search_shows_readable_relevance_not_raw_fusion_scores(db_url):
    """Recall printed RRF scores such as 0.0328, meaningless to a person; now a rank and what matched."""
    who = ["--workspace", "g1", "--user", "u1", "--db", db_url]
    omoide("memory", "add", "誕生日は3月15日", *who)
    omoide("memory", "add", "好きな食べ物はラーメン", *who)
    code, out = omoide("memory", "search", "誕生日", *who)
    assert code == 0, out
    assert not re.search(r"0\.0\d{3}", out), out
    assert "found by" in out and ("meaning" in out or "words" in out)
    code, out = omoide("memory", "search", "誕生日", *who, "--explain")
    assert re.search(r"score 0\.0\d{3}", out), out  # the raw numbers stay one option away
