"""A command whose extra is not installed says which one, in one line, and exits 1 — and the
``[extra]`` of the hint survives rich's markup (it used to print ``pip install 'omoide'``).

The extras are installed in the dev environment, so each test hides the packages an extra
brings (``sys.modules[name] = None`` makes ``import name`` fail and ``find_spec`` miss it) and
drops omoide's modules that import them. ``tests/install`` checks the same on real installs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omoide.cli import app


def _hide(monkeypatch: pytest.MonkeyPatch, *packages: str) -> None:
    for name in list(sys.modules):
        top = name.partition(".")[0]
        if top in packages or name.startswith(
            ("omoide.stores.postgres", "omoide.mcp", "omoide.bots.", "omoide.server")
        ):
            monkeypatch.delitem(sys.modules, name)
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)


def _invoke(tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    base = {"OMOIDE_DATABASE_URL": f"sqlite:///{tmp_path / 'extras.db'}", "OMOIDE_EMBEDDER": "hashing"}
    if not (tmp_path / "extras.db").exists():  # read-only commands refuse a missing database first
        assert CliRunner().invoke(app, ["migrate"], env=base).exit_code == 0
    result = CliRunner().invoke(app, list(args), env={**base, **env})
    assert not isinstance(result.exception, ImportError), result.exception  # no traceback
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    ("hidden", "args", "env", "extra"),
    [
        (("uvicorn",), ["serve"], {}, "server"),
        (("fastapi",), ["serve"], {}, "server"),
        (("asyncpg",), ["serve", "--db", "postgresql://omoide@127.0.0.1:1/omoide"], {}, "postgres"),
        (("mcp", "mcp_types"), ["mcp", "--workspace", "g1"], {}, "mcp"),
        (("discord",), ["discord"], {"DISCORD_TOKEN": ""}, "discord"),
        (("slack_bolt",), ["slack"], {}, "slack"),
        (("asyncpg",), ["status", "--db", "postgresql://omoide@127.0.0.1:1/omoide"], {}, "postgres"),
        (("asyncpg",), ["migrate", "--db", "postgresql://omoide@127.0.0.1:1/omoide"], {}, "postgres"),
        (("cohere",), ["search", "いつ？", "--guild", "g1"], {"OMOIDE_RERANKER": "cohere:rerank-v3.5"}, "cohere"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list | tuple) else None,
)
def test_missing_extra_prints_the_hint_and_exits_1(monkeypatch, tmp_path, hidden, args, env, extra):
    _hide(monkeypatch, *hidden)
    code, stderr = _invoke(tmp_path, *args, **env)
    assert code == 1, stderr
    assert f"pip install 'omoide[{extra}]'" in stderr, stderr
    assert "Traceback" not in stderr and stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr


def test_providers_table_keeps_the_extra(monkeypatch, tmp_path):
    _hide(monkeypatch, "anthropic")
    result = CliRunner().invoke(
        app, ["providers"], env={"OMOIDE_LLM": "anthropic:claude-sonnet-4-5", "OMOIDE_EMBEDDER": "hashing"}
    )
    assert result.exit_code == 1
    assert "omoide[anthropic]" in "".join(result.stdout.split()), result.stdout


def test_error_text_is_printed_as_it_is(tmp_path):
    """Error messages are not rich markup: brackets in them are printed."""
    code, stderr = _invoke(tmp_path, "sessions", "show", "discord:123:c=[bold]4[/]:u=7")
    assert code == 1
    assert "'discord:123:c=[bold]4[/]:u=7'" in stderr, stderr
