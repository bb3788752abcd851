"""Sudachi is a base dependency exactly where a SudachiPy wheel exists (issue 20).

SudachiPy is Rust: on a platform without a wheel, pip would try a source build and fail the
whole ``pip install omoide``. The requirement's environment marker keeps it to the platforms
with wheels; elsewhere search falls back to bigrams (``tests/text/test_tokenizer_fallback.py``)
and ``omoide[ja]`` still asks for Sudachi unconditionally.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SUDACHI = ("sudachipy", "sudachidict-core")

CPYTHON = {"platform_python_implementation": "CPython"}
WITH_WHEELS = [
    {"sys_platform": "linux", "platform_machine": "x86_64"},
    {"sys_platform": "linux", "platform_machine": "aarch64"},
    {"sys_platform": "darwin", "platform_machine": "arm64"},
    {"sys_platform": "darwin", "platform_machine": "x86_64"},
    {"sys_platform": "win32", "platform_machine": "AMD64"},
]
WITHOUT_WHEELS = [
    {"sys_platform": "linux", "platform_machine": "armv7l"},
    {"sys_platform": "win32", "platform_machine": "ARM64"},
    {"sys_platform": "linux", "platform_machine": "x86_64", "platform_python_implementation": "PyPy"},
]


def _base(name: str) -> Requirement:
    (found,) = [r for r in map(Requirement, PROJECT["dependencies"]) if r.name == name]
    return found


@pytest.mark.parametrize("name", SUDACHI)
def test_sudachi_is_a_base_dependency_where_a_wheel_exists(name: str) -> None:
    requirement = _base(name)
    assert requirement.marker is not None
    for env in WITH_WHEELS:
        assert requirement.marker.evaluate({**CPYTHON, **env}), env
    for env in WITHOUT_WHEELS:
        assert not requirement.marker.evaluate({**CPYTHON, **env}), env
    assert requirement.marker.evaluate()  # this machine (the CI's) gets Sudachi


def test_ja_extra_still_exists_and_asks_for_sudachi_everywhere() -> None:
    extra = [Requirement(r) for r in PROJECT["optional-dependencies"]["ja"]]
    assert sorted(r.name for r in extra) == sorted(SUDACHI)
    assert all(r.marker is None for r in extra)
    assert {str(r.specifier) for r in extra} == {str(_base(n).specifier) for n in SUDACHI}
