"""Finding Chromium for the browser tests: a clear reason to skip when there is none (no browser
is started here)."""

from __future__ import annotations

from . import browser


def test_no_chromium_and_not_ci_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setattr(browser, "CANDIDATES", (str(tmp_path / "no-chromium"),))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    found, reason = browser.chromium_or_reason()
    assert found is None and "apt-get install chromium" in reason and "CI=1" in reason


def test_on_ci_without_apt_it_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(browser, "CANDIDATES", (str(tmp_path / "no-chromium"),))
    monkeypatch.setenv("PATH", str(tmp_path))  # no apt-get either
    monkeypatch.setenv("CI", "1")
    found, reason = browser.chromium_or_reason()
    assert found is None and "cannot install it here" in reason


def test_an_installed_chromium_is_found(monkeypatch, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(browser, "CANDIDATES", (str(fake),))
    assert browser.chromium_or_reason() == (str(fake), "")
