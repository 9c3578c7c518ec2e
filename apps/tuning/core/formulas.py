"""Profile values that are formulas of host facts, evaluated safely.

A value such as ``ram / 4`` or ``16MB if ram >= 2GB else 8MB`` is parsed with
Python's ``ast`` and walked by a small evaluator that knows only numbers, size
literals (1024-based: kB, MB, GB, TB), a handful of host variables, arithmetic,
comparisons, ``x if cond else y``, ``and``/``or``/``not`` and ``min``/``max``.
Nothing is ever passed to ``eval``: an unknown node is a FormulaError.

A value is a formula only when it names a variable or function, holds a size
literal or an arithmetic/comparison character; everything else ("off", "lz4",
"16K", "fsync", "0.9", "-1", "ISO, MDY") passes through untouched, because
those are what ZFS and PostgreSQL expect verbatim.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from apps.common.sizes import (  # noqa: F401  (format_pg_size is part of this API)
    SIZE_UNITS,
    KiB,
    MiB,
    format_pg_size,
    format_zfs_size,
    parse_zfs_size,
    pg_size_in_unit,
)
from apps.remote.facts.host import Cluster, HostFacts
from apps.remote.facts.numbers import is_digits
from apps.tuning.core import facts as readers

DISK_KINDS = ("hdd", "ssd", "nvme")
VARIABLES = ("ram", "cpus", "connections", "shared_buffers", "disk")
FUNCTIONS: dict[str, Callable[..., object]] = {"min": min, "max": max}
BYTE_VARIABLES = frozenset({"ram", "shared_buffers"})
MAX_LENGTH = 500  # profiles are typed by people; a longer value is a mistake or an attack
# The evaluator recurses once per nesting level (and Python's own parser has limits
# of its own): bound both, so "- - - ... 1" is refused at save time, not a crash later.
MAX_DEPTH = 32
MAX_NODES = 200

_SIZE_LITERAL = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(kB|MB|GB|TB)(?!\w)")
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # not the "min" of "15min"
_OPERATOR_CHARS = frozenset("*/+()<>=")


class FormulaError(ValueError):
    """A formula that is not allowed, cannot be parsed, or cannot be evaluated here."""


@dataclass(frozen=True)
class Variables:
    """What a formula may read. None means "not known on this host"."""

    ram: int | None  # bytes (MemTotal)
    cpus: int | None
    connections: int  # desired max_connections, else the cluster's, else 100
    shared_buffers: int | None  # bytes; None while shared_buffers itself is resolved
    disk: str  # "hdd" | "ssd" | "nvme"

    def get(self, name: str) -> int | str:
        value = getattr(self, name)
        if value is None:
            raise FormulaError(f"{name} is not known here, so a formula cannot use it")
        return value


_NO_HOST = Variables(ram=None, cpus=None, connections=100, shared_buffers=None, disk="ssd")


# -- PGTune's published formulas (pgtune.leopard.in.ua, its configuration.js), as expressions
# max_worker_processes in PGTune is the CPU count, or its default 8 below 4 CPUs.
PGTUNE_WORKERS = "(cpus if cpus >= 4 else 8)"
SHARED_BUFFERS = "ram / 4"
EFFECTIVE_CACHE_SIZE = "ram * 3 / 4"
MAINTENANCE_WORK_MEM = "min(ram / 16, 2GB)"  # the May 2025 cap; HEAD caps at 8GB
# PGTune's own work_mem, kept for reference: it divides "RAM minus shared_buffers" as if
# nothing else used it, while the ARC formula below spends the same memory again.
PGTUNE_WORK_MEM = (
    f"max(4MB, (ram - shared_buffers) / ((connections + {PGTUNE_WORKERS}) * 3))"
)
# 3% of shared_buffers, at most 16MB (14MB-16MB rounds up to 16MB), at least 32kB.
WAL_BUFFERS = (
    "16MB if shared_buffers * 3 / 100 >= 14MB else max(32kB, shared_buffers * 3 / 100)"
)
# RAM is budgeted once: shared_buffers, the OS (kernel, page tables, backends' own
# memory: at least 1GB or 1/8 of RAM), then what remains split evenly between the ARC
# and the sorts and hashes of every connection (PGTune's three work_mem per connection
# and worker). So shared_buffers + ARC + (connections + workers) x 3 x work_mem + OS
# adds up to RAM, not more. 64MB is OpenZFS's minimum zfs_arc_max; below it the value
# is silently ignored.
OS_RESERVE = "max(1GB, ram / 8)"
CACHE_ROOM = f"(ram - shared_buffers - {OS_RESERVE})"
ZFS_ARC_MAX = f"max(64MB, {CACHE_ROOM} / 2)"
WORK_MEM = f"max(4MB, {CACHE_ROOM} / 2 / ((connections + {PGTUNE_WORKERS}) * 3))"
# Size the kernel's dirty limit to what the storage drains in seconds, not to RAM
# ("PG Phriday: Steady Storage Stampede", Shaun Thomas: 1GB for SSD-class storage
# with no controller cache; background writeback from 25% of it).
DIRTY_BYTES = "min(ram / 10, 256MB if disk == 'hdd' else 1GB)"
DIRTY_BACKGROUND_BYTES = f"({DIRTY_BYTES}) / 4"


def is_formula(text: str) -> bool:
    names = set(_IDENTIFIER.findall(text))
    return bool(
        names & (set(VARIABLES) | set(FUNCTIONS))
        or _SIZE_LITERAL.search(text)
        or _OPERATOR_CHARS & set(text)
    )


def resolve(expression: str, variables: Variables) -> int | str:
    """The value a profile entry stands for on this host.

    Integers (bytes, counts) come back as int, floored: a fraction of a byte means
    nothing. A non-integral result that involves no size (a cost such as
    ``4 if disk == 'hdd' else 1.1``) comes back as a decimal string. Plain values
    pass through as the stripped text.
    """
    text = expression.strip()
    if not is_formula(text):
        return text
    tree = parse(text)
    evaluator = _Evaluator(variables)
    evaluator.uses_bytes = bool(_SIZE_LITERAL.search(text))
    value = evaluator.visit(tree.body)
    return _result(value, evaluator.uses_bytes, expression)


def check(expression: str) -> None:
    """Raise FormulaError when a formula could never evaluate (used to validate profiles)."""
    text = expression.strip()
    if is_formula(text):
        _validate(parse(text))


def constant(expression: str) -> int | str | None:
    """The value of an entry that reads no host fact ("64MB", "2GB * 2", "off"); else None.

    Lets a profile be range-checked when it is saved, before any host is known.
    """
    text = expression.strip()
    if any(isinstance(node, ast.Name) for node in ast.walk(parse(text))) if is_formula(text) \
            else False:
        return None
    return resolve(text, _NO_HOST)


def parse(text: str) -> ast.Expression:
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"formula longer than {MAX_LENGTH} characters")
    source = _SIZE_LITERAL.sub(_bytes_of_literal, text)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as error:
        raise FormulaError(f"cannot parse formula {text!r}: {error.msg}") from None
    except (RecursionError, MemoryError):
        raise FormulaError(f"formula nested deeper than {MAX_DEPTH} levels") from None
    _bound(tree)
    _validate(tree)
    return tree


def _bound(tree: ast.AST) -> None:
    """Refuse trees too deep or too large to evaluate, walking iteratively (no recursion)."""
    stack, count = [(tree, 0)], 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH:
            raise FormulaError(f"formula nested deeper than {MAX_DEPTH} levels")
        if count > MAX_NODES:
            raise FormulaError(f"formula with more than {MAX_NODES} parts")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _bytes_of_literal(match: re.Match[str]) -> str:
    return str(math.floor(Fraction(match[1]) * SIZE_UNITS[match[2]]))


_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.BoolOp, ast.Call,
    ast.Name, ast.Load, ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
    ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE,
)


def _validate(tree: ast.AST) -> None:
    """Reject every node outside the tiny language before anything is evaluated."""
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise FormulaError(f"{_describe(node)} is not allowed in a formula")
        if isinstance(node, ast.Name) and node.id not in VARIABLES and node.id not in FUNCTIONS:
            raise FormulaError(
                f"unknown name {node.id!r} (allowed: {', '.join(VARIABLES)}, min(), max())"
            )
        if isinstance(node, ast.Call):
            _validate_call(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.FloorDiv) \
                and isinstance(node.right, ast.Constant) and node.right.value == 0:
            raise FormulaError("division by zero in a formula")
        if isinstance(node, ast.Constant) and (
                isinstance(node.value, bool) or not isinstance(node.value, int | float | str)):
            raise FormulaError(f"constant {node.value!r} is not allowed in a formula")


def _validate_call(node: ast.Call) -> None:
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        raise FormulaError("only min() and max() may be called in a formula")
    if node.keywords or len(node.args) < 2:
        raise FormulaError(f"{node.func.id}() takes two or more plain arguments")


def _describe(node: ast.AST) -> str:
    names = {ast.Pow: "operator **", ast.Mod: "operator %", ast.Attribute: "attribute access",
             ast.Subscript: "indexing", ast.Lambda: "lambda"}
    return names.get(type(node), f"{type(node).__name__} syntax")


Number = int | Fraction
Value = Number | str | bool

_BINARY: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: Fraction(a) / b,  # exact; floored once, at the end
    ast.FloorDiv: lambda a, b: a // b,
}
_COMPARE: dict[type, Callable[[Value, Value], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,  # type: ignore[operator]
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,  # type: ignore[operator]
}


class _Evaluator(ast.NodeVisitor):
    def __init__(self, variables: Variables) -> None:
        self.variables = variables
        self.uses_bytes = False  # decides whether a fractional result is floored

    def visit_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, float):
            return Fraction(repr(node.value))
        return node.value

    def visit_Name(self, node: ast.Name) -> Value:
        if node.id in FUNCTIONS:
            raise FormulaError(f"{node.id} is a function: call it as {node.id}(a, b)")
        self.uses_bytes |= node.id in BYTE_VARIABLES
        return self.variables.get(node.id)

    def visit_BinOp(self, node: ast.BinOp) -> Number:
        left, right = self._number(node.left), self._number(node.right)
        if isinstance(node.op, ast.Div | ast.FloorDiv) and right == 0:
            raise FormulaError("division by zero in a formula")
        return _BINARY[type(node.op)](left, right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Value:
        if isinstance(node.op, ast.Not):
            return not self._truth(node.operand)
        value = self._number(node.operand)
        return -value if isinstance(node.op, ast.USub) else value

    def visit_Compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.visit(right_node)
            if isinstance(left, str) != isinstance(right, str) and not isinstance(
                    op, ast.Eq | ast.NotEq):
                raise FormulaError("cannot order a word against a number")
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def visit_BoolOp(self, node: ast.BoolOp) -> bool:
        truths = (self._truth(value) for value in node.values)
        return all(truths) if isinstance(node.op, ast.And) else any(truths)

    def visit_IfExp(self, node: ast.IfExp) -> Value:
        return self.visit(node.body if self._truth(node.test) else node.orelse)

    def visit_Call(self, node: ast.Call) -> Number:
        function = FUNCTIONS[node.func.id]  # type: ignore[attr-defined]  # validated
        return function(*(self._number(arg) for arg in node.args))  # type: ignore[return-value]

    def generic_visit(self, node: ast.AST) -> Value:
        raise FormulaError(f"{_describe(node)} is not allowed in a formula")

    def _number(self, node: ast.AST) -> Number:
        value = self.visit(node)
        if isinstance(value, bool) or not isinstance(value, int | Fraction):
            raise FormulaError(f"expected a number, got {value!r}")
        return value

    def _truth(self, node: ast.AST) -> bool:
        value = self.visit(node)
        if not isinstance(value, bool):
            raise FormulaError(f"expected a condition (a comparison), got {value!r}")
        return value


def _result(value: Value, uses_bytes: bool, expression: str) -> int | str:
    if isinstance(value, bool):
        raise FormulaError(f"formula {expression!r} is a condition, not a value")
    if isinstance(value, str):
        return value
    if isinstance(value, int) or value.denominator == 1 or uses_bytes:
        return math.floor(value)
    return f"{float(value):.6f}".rstrip("0").rstrip(".")


def variables_of(facts: HostFacts, cluster: Cluster | None, desired_pg: dict) -> Variables:
    """The variables a profile's formulas see for one cluster (or the host when None).

    For host-wide layers (module, sysctl) shared_buffers is the sum over the
    host's clusters: the ARC has to leave room for every one of them.
    """
    base = Variables(
        ram=facts.mem_total, cpus=facts.cpus,
        connections=100, shared_buffers=None, disk=readers.disk_kind(facts, cluster),
    )
    clusters = [cluster] if cluster is not None else facts.clusters
    connections = _connections(base, cluster, desired_pg)
    with_connections = replace(base, connections=connections)
    total = sum(_shared_buffers(with_connections, c, desired_pg) for c in clusters)
    return replace(with_connections, shared_buffers=total)


def _connections(base: Variables, cluster: Cluster | None, desired_pg: dict) -> int:
    wanted = desired_pg.get("max_connections")
    if wanted is not None:
        value = resolve(wanted, base)
        if isinstance(value, int) or is_digits(value):
            return int(value)
        raise FormulaError(f"max_connections must be a whole number, got {value!r}")
    current = readers.setting_value(cluster, "max_connections") if cluster else None
    return int(current) if current and is_digits(current) else 100


def _shared_buffers(variables: Variables, cluster: Cluster, desired_pg: dict) -> int:
    wanted = desired_pg.get("shared_buffers")
    if wanted is not None:
        value = resolve(wanted, variables)  # shared_buffers is None: no self-reference
        if isinstance(value, int):
            return value
        try:
            return pg_size_in_unit(value, "8kB")  # a bare number counts 8kB buffers
        except ValueError as error:
            raise FormulaError(f"shared_buffers: {error}") from None
    current = readers.setting_bytes(cluster, "shared_buffers")
    return current if current is not None else 128 * MiB  # PostgreSQL's default
