"""The layout rules of ``docs/architecture.md``, checked on the source tree with :mod:`ast`.

* The stores sit below every service: nothing under ``omoide/stores/`` imports a feature
  package (``knowledge``, ``search``, ``memories``, ``summaries``, ``answers``, ``apikeys``) or
  the engine — record types live with their store contract instead.
* No module is over 600 lines.
* The two backends mirror each other: the same role modules, file by file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import omoide

SRC = Path(omoide.__file__).resolve().parent
STORES = SRC / "stores"
FEATURES = ("knowledge", "search", "memories", "summaries", "answers", "apikeys", "engine")
MAX_LINES = 600


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (absolute names; relative imports resolved), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(("omoide", *path.relative_to(SRC).with_suffix("").parts[:-1]))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _is_feature(module: str) -> bool:
    parts = module.split(".")
    return len(parts) >= 2 and parts[0] == "omoide" and parts[1] in FEATURES


def test_stores_import_no_feature_package() -> None:
    offenders = [
        f"{path.relative_to(SRC.parent)}:{line} imports {module}"
        for path in sorted(STORES.rglob("*.py"))
        for line, module in _imported_modules(path)
        if _is_feature(module)
    ]
    assert offenders == [], "the stores must not depend on the services above them:\n" + "\n".join(offenders)


def test_the_import_walk_sees_feature_imports(tmp_path: Path) -> None:
    """The check above would catch each kind of import it claims to (absolute, from, relative)."""
    probe = STORES / "sqlite" / "_probe_for_architecture_test.py"
    assert not probe.exists()
    probe.write_text("import omoide.engine\nfrom omoide.search import pipeline\nfrom ...knowledge import archiver\n")
    try:
        modules = [m for _, m in _imported_modules(probe)]
    finally:
        probe.unlink()
    assert [m for m in modules if _is_feature(m)] == [
        "omoide.engine",
        "omoide.search",
        "omoide.search.pipeline",
        "omoide.knowledge",
        "omoide.knowledge.archiver",
    ]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_600_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC.parent)} has {lines} lines: split it by responsibility"


def test_backends_mirror_each_other_file_by_file() -> None:
    sqlite = {p.name for p in (STORES / "sqlite").glob("*.py")}
    postgres = {p.name for p in (STORES / "postgres").glob("*.py")}
    roles = {"sessions.py", "knowledge.py", "search.py", "memories.py", "summaries.py", "api_keys.py", "store.py"}
    assert roles <= sqlite, f"SQLite lacks {sorted(roles - sqlite)}"
    assert roles <= postgres, f"PostgreSQL lacks {sorted(roles - postgres)}"
