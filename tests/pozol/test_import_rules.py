"""ARCHITECTURE.md's import rules, checked against the imports the code really has.

The rules are the table under "## Import rules" in ARCHITECTURE.md, so the page
and the code cannot drift apart: an import the table does not allow fails here,
and so does a rule no longer needed by any import (the page would be untrue).
Imports inside functions count: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# pozol/ is wiring (settings, urls, celery): it may import every app, and none imports it.
WIRING = {"apps", "pozol", "pozol.settings", "pozol.urls", "pozol.celery", "pozol.wsgi",
          "pozol.asgi"}
# File-level circles a rule allows, each with its reason (also in ARCHITECTURE.md).
ALLOWED_CIRCLES = {
    # The engine enqueues a step's Celery task and the task runs the engine: the
    # one loop, and the task module is the engine's entry point for workers.
    frozenset({"apps.ops.engine", "apps.ops.tasks"}),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    found = {}
    for path in sorted([*ROOT.glob("apps/**/*.py"), *ROOT.glob("pozol/*.py")]):
        if "migrations" not in path.parts:
            found[module_name(path)] = path
    return found


MODULES = product_modules()


def imported_names(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function, as absolute names."""
    tree = ast.parse(path.read_text(), str(path))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import module` imports the module: naming the package
            # too would make every package that imports its own parts a circle.
            found = {f"{base}.{alias.name}" for alias in node.names}
            names.update(found if found <= set(MODULES) else {base, *found})
    return names


def own_imports(name: str) -> set[str]:
    """The product modules `name` imports (a package's name stands for its __init__)."""
    return {found for found in imported_names(MODULES[name]) if found in MODULES} - {name}


def app_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if parts[0] == "apps" else parts[0]


def read_rules() -> dict[str, set[str]]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Import rules", 1)[1]
    block = re.search(r"```\n(.*?)\n```", section, re.S).group(1)
    rules: dict[str, set[str]] = {}
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            app, _, allowed = line.partition(":")
            allowed_apps = {a.strip() for a in allowed.split(",")} - {"", "-"}
            rules[app.strip()] = allowed_apps
    return rules


RULES = read_rules()


def app_imports() -> dict[str, dict[str, set[str]]]:
    """app -> imported app -> the modules that import it (to name them in a failure)."""
    found: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name in MODULES:
        if name in WIRING:
            continue
        for other in own_imports(name):
            if app_of(other) != app_of(name):
                found[app_of(name)][app_of(other)].add(f"{name} -> {other}")
    return found


def test_every_app_has_a_rule():
    apps = {app_of(name) for name in MODULES if name not in WIRING}
    assert apps == set(RULES), "ARCHITECTURE.md's import rules name exactly the apps"


def test_every_import_between_apps_is_one_the_rules_allow():
    broken = [where for app, others in app_imports().items() for other, wheres in others.items()
              if other not in RULES[app] for where in sorted(wheres)]
    assert broken == [], "imports ARCHITECTURE.md does not allow"


def test_every_rule_is_used_so_the_page_says_what_is_true():
    used = app_imports()
    unused = [f"{app}: {other}" for app, allowed in RULES.items() for other in allowed
              if other not in used.get(app, {})]
    assert unused == [], "rules no import needs: drop them from ARCHITECTURE.md"


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                other = stack.pop()
                component.add(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_rules_have_no_cycle_between_apps():
    assert cycles(RULES) == []


def test_no_file_level_circle_inside_an_app_but_the_engine_loop():
    graph = {name: {other for other in own_imports(name) if app_of(other) == app_of(name)}
             for name in MODULES if name not in WIRING}
    found = [sorted(circle) for circle in cycles(graph) if frozenset(circle) not in ALLOWED_CIRCLES]
    assert found == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES
                                        if n.startswith("apps.remote") or ".core" in n))
def test_pure_modules_touch_no_django(name):
    """apps/remote and every app's core/ are pure: no Django, no database."""
    django = sorted(n for n in imported_names(MODULES[name]) if n.split(".")[0] in
                    ("django", "rest_framework", "celery"))
    assert django == []


def test_no_two_modules_of_an_app_share_a_name():
    by_app: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, path in MODULES.items():
        # Entry points (__main__, management commands) are named by what runs them.
        if path.name not in ("__init__.py", "__main__.py") and "commands" not in path.parts:
            by_app[app_of(name)][path.stem].append(name)
    shared = {stem: names for app in by_app.values() for stem, names in app.items()
              if len(names) > 1}
    assert shared == {}


def test_product_code_never_imports_tests_nor_points_into_shared():
    offending = [name for name, path in MODULES.items()
                 if any(n.split(".")[0] == "tests" for n in imported_names(path))
                 or "../shared" in path.read_text()]
    templates = [str(p) for p in (ROOT / "templates").rglob("*.html")
                 if "../shared" in p.read_text()]
    assert offending + templates == []


def named_paths(text: str) -> set[str]:
    """Repository paths a page names (apps/x/y.py, tests/..., templates/...)."""
    return set(re.findall(r"(?<![\w/.])((?:apps|tests|templates|static|docs|pozol)/[\w./-]*\w)",
                          text))


def exists(path: str) -> bool:
    # `apps/clones/core/commands.create` names a function of commands.py.
    return (ROOT / path).exists() or (ROOT / f"{path.rpartition('.')[0]}.py").exists()


@pytest.mark.parametrize("page", ["ARCHITECTURE.md", "README.md",
                                  *sorted(str(p.relative_to(ROOT))
                                          for p in ROOT.glob("apps/*/__init__.py"))])
def test_every_path_a_design_page_names_exists(page):
    missing = sorted(p for p in named_paths((ROOT / page).read_text()) if not exists(p))
    assert missing == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.rpartition(".")[2] in
                                        ("views", "api", "policy_views", "host_page")))
def test_views_and_api_say_what_they_return(name):
    tree = ast.parse(MODULES[name].read_text())
    bare = [node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.returns is None]
    assert bare == []
