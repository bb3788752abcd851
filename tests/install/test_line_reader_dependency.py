"""The line reader's packages are base dependencies exactly where wheels of all three exist
(issue 16): ``onnxruntime-extensions`` has no CPython 3.14 wheel yet and no source build that pip
could do unattended, so the marker keeps them to CPython 3.11–3.13 on the platforms with wheels;
elsewhere search ranks messages without the reader (``tests/search/test_line_reader.py``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
READER = ("onnxruntime", "onnxruntime-extensions", "nanoranker")

WITH_WHEELS = [
    {"sys_platform": "linux", "platform_machine": "x86_64"},
    {"sys_platform": "linux", "platform_machine": "aarch64"},
    {"sys_platform": "darwin", "platform_machine": "arm64"},
    {"sys_platform": "win32", "platform_machine": "AMD64"},
]
WITHOUT_WHEELS = [
    {"sys_platform": "darwin", "platform_machine": "x86_64"},
    {"sys_platform": "linux", "platform_machine": "armv7l"},
    {"sys_platform": "win32", "platform_machine": "ARM64"},
    {"sys_platform": "linux", "platform_machine": "x86_64", "platform_python_implementation": "PyPy"},
    {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": "3.14"},
]


def _base(name: str) -> Requirement:
    (found,) = [r for r in map(Requirement, PROJECT["dependencies"]) if r.name == name]
    return found


@pytest.mark.parametrize("name", READER)
def test_the_reader_is_a_base_dependency_where_wheels_exist(name: str) -> None:
    requirement = _base(name)
    assert requirement.marker is not None
    base = {"platform_python_implementation": "CPython", "python_version": "3.12"}
    for env in WITH_WHEELS:
        for version in ("3.11", "3.12", "3.13"):
            assert requirement.marker.evaluate({**base, **env, "python_version": version}), (env, version)
    for env in WITHOUT_WHEELS:
        assert not requirement.marker.evaluate({**base, **env}), env
    assert requirement.marker.evaluate()  # this machine (the CI's) gets the reader


def test_the_three_share_one_marker() -> None:
    assert len({str(_base(name).marker) for name in READER}) == 1
