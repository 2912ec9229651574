"""Only storage writes rows: no SQL write statement lives in core/ or navigator/.

The README's layering (navigator -> core -> storage) gives storage/ the only
writers: every INSERT, UPDATE, DELETE or REPLACE is a named operation in
storage/operations/ (or the storage module that owns the table), with typed
arguments, its guards and its reason in one place. A raw write in core or the
navigator bypasses that: the same state change gets a second, drifting copy
(another WHERE guard, another column forgotten). This test reads every module
of core/ and navigator/ with ``ast`` and fails, naming file and line, for any
string constant that is a SQL write statement, and for any ``executescript``.

Prose such as "update the view" or "replace it" is not flagged: only uppercase
SQL statement shapes are (``UPDATE <table> SET``, ``INSERT [OR x] INTO``,
``DELETE FROM``, ``REPLACE INTO``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("core", "navigator")

WRITE = re.compile(
    r"(?:^|[\s(;])(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|REPLACE\s+INTO)\b")
"""A write statement anywhere in the text: at its start, after whitespace, an
opening parenthesis (a CTE or sub-statement) or a semicolon (a script)."""

NAME = " name "
"""Stands for an f-string's replacement field or a non-literal operand of ``+``,
so ``f"UPDATE {table} SET"`` still reads as ``UPDATE <name> SET``."""


def _modules() -> list[Path]:
    return sorted(p for d in CHECKED for p in (ROOT / d).rglob("*.py"))


def _text(node: ast.AST) -> str | None:
    """The text of a string constant or f-string (implicit concatenations are
    already one constant in the tree); None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(part.value) if isinstance(part, ast.Constant) else NAME
                       for part in node.values)
    return None


def _concatenated(node: ast.BinOp) -> str | None:
    """``"UPDATE x " + "SET ..."``: the text of a chain of ``+`` over strings."""
    parts: list[str] = []
    stack: list[ast.AST] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, ast.Add):
            stack += [item.right, item.left]
            continue
        text = _text(item)
        parts.append(text if text is not None else NAME)
    return "".join(parts)


def _findings(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: what`` for each write found in one module (a chain of ``+``
    and its own operands are one finding)."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    where = path.relative_to(root)
    found: dict[tuple[int, str], None] = {}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        text: str | None = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            text = _concatenated(node)
        elif isinstance(node, (ast.Constant, ast.JoinedStr)):
            text = _text(node)
        match = WRITE.search(text) if text is not None else None
        if match is not None:
            found[(line, f"SQL write {' '.join(match.group(0).split())!r}")] = None
        if isinstance(node, ast.Attribute) and node.attr == "executescript":
            found[(line, "executescript")] = None
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def test_only_storage_writes_rows() -> None:
    findings = [f for path in _modules() for f in _findings(path)]
    assert not findings, (
        "SQL writes outside storage/ (move each into a named operation in "
        "storage/operations/):\n" + "\n".join(findings))


@pytest.mark.parametrize("source", [
    'conn.execute("UPDATE user_views SET zoomed = ? WHERE view_id = ?", args)',
    'conn.execute("INSERT OR IGNORE INTO t (a) VALUES (?)", args)',
    'conn.execute("  DELETE FROM t WHERE a = ?", args)',
    'conn.execute("REPLACE INTO t (a) VALUES (?)", args)',
    'conn.execute("INSERT INTO t (a)"\n             " VALUES (?)", args)',
    'conn.execute(f"UPDATE {table} SET a = ? WHERE b = ?", args)',
    'conn.execute("WITH x AS (SELECT 1) UPDATE t SET a = 1")',
    'conn.execute("UPDATE " + table + " SET a = 1")',
    'conn.executescript(script)',
])
def test_detects_writes(tmp_path: Path, source: str) -> None:
    module = tmp_path / "m.py"
    module.write_text(source + "\n")
    assert _findings(module, tmp_path)


@pytest.mark.parametrize("source", [
    'label.update("update the view")',
    'text = "Replace unsafe characters with a space"',
    'conn.execute("SELECT * FROM user_views WHERE state = ?", args)',
    'doc = "Soft delete: the fleet is stamped, its members deregistered"',
    'msg = "INSERT mode is on"',
])
def test_ignores_prose_and_reads(tmp_path: Path, source: str) -> None:
    module = tmp_path / "m.py"
    module.write_text(source + "\n")
    assert not _findings(module, tmp_path)
