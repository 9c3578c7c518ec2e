"""Every library the product imports is a pinned runtime requirement.

The Docker image installs requirements.txt alone, so a library that reaches the
development venv only through a test tool (requests came in with schemathesis)
would import there and fail in the image. Imports inside functions count.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"apps", "pozol", "tests"}


def imported_top_levels() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in [*ROOT.glob("apps/**/*.py"), *ROOT.glob("pozol/*.py"), ROOT / "manage.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in LOCAL and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def required() -> set[str]:
    names = set()
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(normalized(re.split(r"[\[=<>~!; ]", line, maxsplit=1)[0]))
    return names


def test_every_library_the_product_imports_is_in_requirements_txt():
    dists = packages_distributions()
    runtime = required()
    missing = {}
    for module, where in sorted(imported_top_levels().items()):
        provided_by = {normalized(d) for d in dists.get(module, [])}
        assert provided_by, f"{module} (imported by {sorted(where)[:3]}) is not installed"
        if not provided_by & runtime:
            missing[module] = (sorted(provided_by), sorted(where)[:3])
    assert not missing, f"imported by the product, not in requirements.txt: {missing}"
