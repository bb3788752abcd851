"""Sudachi is a base dependency; where it is missing (a platform without a wheel) or its
dictionary does not load, Japanese search falls back to character bigrams with ONE warning,
and ``omoide providers`` says which tokenizer is active.

The fallback is process-wide state (cached once per process), so each case runs in a fresh
interpreter: ``sys.modules[name] = None`` makes a package look uninstalled to both
``import`` and ``importlib.util.find_spec``, as on a platform where pip skipped it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from omoide.text import japanese_tokenizer, search_tokenizer_name, sudachi_problem

HIDE_SUDACHIPY = "import sys; sys.modules['sudachipy'] = None\n"
HIDE_DICTIONARY = "import sys; sys.modules['sudachidict_core'] = None\n"
BREAK_DICTIONARY = textwrap.dedent(
    """
    import sudachipy

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError("system.dic: not a Sudachi dictionary")

    sudachipy.Dictionary = Broken
    """
)
TOKENIZE_TWICE = textwrap.dedent(
    """
    import json
    from omoide.logging import configure_logging
    from omoide.settings import load_settings
    from omoide.text import japanese_tokenizer, search_tokenizer_name, tokenize_for_search

    configure_logging(load_settings(log_level="WARNING"))
    first = tokenize_for_search("今日は天気がいい")
    second = tokenize_for_search("明日の天気")
    info = japanese_tokenizer()
    print(json.dumps({"first": first, "second": second, "name": search_tokenizer_name(),
                      "backend": info.backend, "detail": info.detail}, ensure_ascii=False))
    """
)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(PYTHONIOENCODING="utf-8", OMOIDE_LOG_FORMAT="json")
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_dev_and_base_install_tokenise_japanese_with_sudachi() -> None:
    assert sudachi_problem() is None
    assert search_tokenizer_name() == "sudachi-core:v3"
    info = japanese_tokenizer()
    assert info.backend == "sudachi" and "SudachiPy" in info.detail and "sudachidict-core" in info.detail


@pytest.mark.parametrize(
    ("breakage", "why"),
    [
        (HIDE_SUDACHIPY, "SudachiPy is not installed"),
        (HIDE_DICTIONARY, "sudachidict-core is not installed"),
        (BREAK_DICTIONARY, "does not load (OSError: system.dic: not a Sudachi dictionary)"),
    ],
    ids=["no-sudachipy", "no-dictionary", "dictionary-fails-to-load"],
)
def test_without_sudachi_search_uses_bigrams_and_warns_once(breakage: str, why: str) -> None:
    done = _python(breakage + TOKENIZE_TWICE)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["first"] == ["今日", "日は", "は天", "天気", "気が", "がい", "いい"]
    assert result["second"] == ["明日", "日の", "の天", "天気"]
    assert result["name"] == "ngram:v2" and result["backend"] == "ngram"
    assert why in result["detail"] and "pip install sudachipy sudachidict-core" in result["detail"]
    warnings = [json.loads(line) for line in done.stderr.splitlines() if "japanese_tokenizer_fallback" in line]
    assert len(warnings) == 1, done.stderr  # once per process, however many texts are tokenised
    assert warnings[0]["level"] == "warning" and why in warnings[0]["reason"], warnings
    assert "Traceback" not in done.stderr


def test_providers_names_the_active_japanese_tokenizer_and_the_fallback() -> None:
    run_cli = "import sys; from omoide.cli import main; sys.argv = ['omoide', 'providers', '--json']; main()\n"
    ok = _python(run_cli)
    assert ok.returncode == 0, ok.stderr
    (row,) = [r for r in json.loads(ok.stdout) if r["role"] == "ja_tokenizer"]
    assert row["spec"] == "sudachi-core:v3" and row["backend"] == "sudachi" and row["usable"] is True

    fallback = _python(HIDE_SUDACHIPY + run_cli)
    assert fallback.returncode == 0, fallback.stderr  # bigrams work: not a failure of `providers`
    (row,) = [r for r in json.loads(fallback.stdout) if r["role"] == "ja_tokenizer"]
    assert row["spec"] == "ngram:v2" and row["backend"] == "ngram"
    assert row["reason"].startswith("fallback, character bigrams: SudachiPy is not installed")
    assert fallback.stderr.count("japanese_tokenizer_fallback") == 1, fallback.stderr
