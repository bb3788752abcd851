from __future__ import annotations

import pytest

from omoide.errors import ConfigError
from omoide.models import KeyPolicy
from omoide.settings import DEFAULT_DATABASE_URL, load_settings


def test_defaults_are_offline_sqlite():
    s = load_settings()
    assert s.database_url == DEFAULT_DATABASE_URL
    assert s.backend == "sqlite"
    assert s.session_window == 20
    assert s.llm is None


def test_environment_overrides_defaults(monkeypatch):
    monkeypatch.setenv("OMOIDE_DATABASE_URL", "postgresql://u:p@localhost/omoide")
    monkeypatch.setenv("OMOIDE_SESSION_WINDOW", "30")
    monkeypatch.setenv("OMOIDE_SESSION_KEY_POLICY", "channel")
    s = load_settings()
    assert s.backend == "postgresql"
    assert s.session_window == 30
    assert s.session_key_policy is KeyPolicy.CHANNEL


def test_arguments_beat_environment_beat_toml(monkeypatch, tmp_path):
    config = tmp_path / "omoide.toml"
    config.write_text('session_window = 7\ndb_pool_max = 3\nlog_level = "DEBUG"\n', encoding="utf-8")
    monkeypatch.setenv("OMOIDE_CONFIG", str(config))
    monkeypatch.setenv("OMOIDE_DB_POOL_MAX", "4")
    s = load_settings(log_level="ERROR")
    assert s.session_window == 7  # from the file
    assert s.db_pool_max == 4  # environment beats the file
    assert s.log_level == "ERROR"  # arguments beat everything


def test_omoide_toml_in_working_directory_is_read(tmp_path):
    (tmp_path / "omoide.toml").write_text("session_window = 11\n", encoding="utf-8")  # cwd is tmp_path
    assert load_settings().session_window == 11


def test_invalid_values_name_the_setting(monkeypatch):
    monkeypatch.setenv("OMOIDE_SESSION_WINDOW", "0")
    monkeypatch.setenv("OMOIDE_DATABASE_URL", "mysql://x")
    monkeypatch.setenv("OMOIDE_SESSION_KEY_POLICY", "per-planet")
    with pytest.raises(ConfigError) as info:
        load_settings()
    text = str(info.value)
    assert "OMOIDE_SESSION_WINDOW" in text
    assert "OMOIDE_DATABASE_URL" in text and "sqlite:///" in text and "postgresql://" in text
    assert "OMOIDE_SESSION_KEY_POLICY" in text and "user_channel" in text


def test_unknown_setting_is_rejected():
    with pytest.raises(ConfigError, match="no_such_setting"):
        load_settings(no_such_setting=1)


def test_pool_bounds_are_checked():
    with pytest.raises(ConfigError, match="db_pool_min"):
        load_settings(db_pool_min=5, db_pool_max=2)


def test_missing_or_broken_config_file(monkeypatch, tmp_path):
    monkeypatch.setenv("OMOIDE_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="not a file"):
        load_settings()
    broken = tmp_path / "broken.toml"
    broken.write_text("session_window = = 3\n", encoding="utf-8")
    monkeypatch.setenv("OMOIDE_CONFIG", str(broken))
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_settings()
