"""Every third-party module ``src/omoide`` imports comes from a dependency or extra pyproject.toml declares.

The dev install (every extra and their transitive packages) hides an import no declared package
provides — until a user's ``pip install 'omoide[server]'`` answers every error with a 500
(``orjson``). The install-path tests (``test_install_paths.py``) prove it for real; this check
says which import at once.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_normal(re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0]) for r in requirements}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _imports(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return tops


def test_every_import_is_declared():
    declared = _declared()
    distributions = metadata.packages_distributions()
    undeclared = {}
    for path in sorted((ROOT / "src" / "omoide").rglob("*.py")):
        for top in _imports(path) - set(sys.stdlib_module_names) - {"__future__", "omoide"}:
            providers = {_normal(d) for d in distributions.get(top, [])}
            if not providers:
                undeclared.setdefault(top, f"{path.relative_to(ROOT)} (not installed here either)")
            elif not providers & declared:
                undeclared.setdefault(top, f"{path.relative_to(ROOT)} (from {', '.join(sorted(providers))})")
    assert not undeclared, f"imports no declared dependency provides: {undeclared}"
