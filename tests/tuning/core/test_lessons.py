"""docs/lessons.md names rules, profile settings and tests: every one of them must exist."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from apps.tuning.core import advisor
from apps.tuning.core.profiles import builtin

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "docs" / "lessons.md"
_CODE = re.compile(r"`([^`]+)`")


def rows() -> list[list[str]]:
    lines = [line for line in TABLE.read_text().splitlines() if re.match(r"\| \d+ \|", line)]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


@cache
def defined_functions(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))


@cache
def defined_names(path: str) -> frozenset[str]:
    """Module-level functions, classes and assigned names: what `code:` may point at."""
    tree = ast.parse((ROOT / path).read_text())
    names = {node.name for node in tree.body
             if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    names |= {target.id for node in tree.body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name)}
    return frozenset(names)


UNCOVERED = ("not yet", "not checkable")


def profile_has(reference: str) -> bool:
    _, slug, layer, key = reference.split(":", 3)
    settings = builtin(slug).settings
    if layer.startswith("zfs."):
        return key in settings.zfs.get(layer.removeprefix("zfs."), {})
    return key in getattr(settings, layer)


def test_the_table_has_rows_and_each_row_five_cells():
    found = rows()
    assert len(found) >= 60
    assert all(len(row) == 5 for row in found)


def test_every_rule_and_profile_setting_named_exists():
    known = set(advisor.rule_ids())
    for _, lesson, _, covered, _ in rows():
        for reference in _CODE.findall(covered):
            if reference.startswith("rule:"):
                assert reference.removeprefix("rule:") in known, lesson
            elif reference.startswith("code:"):
                path, name = reference.removeprefix("code:").split("::")
                assert name in defined_names(path), f"{lesson}: {reference}"
            else:
                assert reference.startswith("profile:") and profile_has(reference), lesson


def test_every_test_named_exists():
    for _, lesson, _, _, test in rows():
        for reference in _CODE.findall(test):
            path, name = reference.split("::")
            assert name.split("[")[0] in defined_functions(path), f"{lesson}: {reference}"


def test_unfinished_lessons_say_not_yet_or_not_checkable():
    for _, lesson, _, covered, test in rows():
        assert _CODE.search(covered) or covered.startswith(UNCOVERED), lesson
        assert _CODE.search(test) or test.startswith(UNCOVERED), lesson


def test_the_count_under_the_table_is_the_tables():
    found = rows()
    covered = sum(1 for row in found if not row[3].startswith(UNCOVERED))
    assert f"Covered: {covered} of {len(found)}," in TABLE.read_text()
