"""The shape the structure pass left, measured from the code so it stays.

- The ``Engine`` is a thin facade: the context plus the requests bound to it; the
  requests live in ``core/engine/commands/`` and no engine function grows past a
  screen.
- Provider differences live in ``core/providers/``: no product module elsewhere
  compares a value with a ``Provider`` member or spells a provider's name in a
  comparison.
- The simulators (``core/providers/fake/``) have one product user, the demo.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("core", "navigator", "storage")
ENGINE_MAX_LINES = 200
FUNCTION_MAX_LINES = 60
PROVIDER_NAMES = {"claude", "codex", "CLAUDE", "CODEX"}


def _product_files() -> list[Path]:
    return sorted(path for package in PRODUCT for path in (ROOT / package).rglob("*.py"))


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_engine_is_a_thin_facade() -> None:
    engine = ROOT / "core" / "engine" / "engine.py"
    lines = engine.read_text().count("\n")
    assert lines <= ENGINE_MAX_LINES, f"core/engine/engine.py has {lines} lines"
    tree = ast.parse(engine.read_text())
    [facade] = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    methods = [node.name for node in facade.body if isinstance(node, ast.FunctionDef)]
    assert methods == [], f"the Engine's requests belong in core/engine/commands: {methods}"


def test_no_engine_function_runs_past_a_screen() -> None:
    long = [f"{_relative(path)}:{node.lineno} {node.name} "
            f"({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted((ROOT / "core" / "engine").rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno is not None
            and node.end_lineno - node.lineno + 1 > FUNCTION_MAX_LINES]
    assert not long, "split these functions:\n" + "\n".join(long)


def _branches_on_a_provider(node: ast.Compare) -> bool:
    """``x is Provider.CLAUDE``, ``p == "codex"``, ``Provider.CODEX in ...`` and the like."""
    for operand in (node.left, *node.comparators):
        if isinstance(operand, ast.Attribute) and operand.attr in PROVIDER_NAMES \
                and isinstance(operand.value, ast.Name) and operand.value.id == "Provider":
            return True
        if isinstance(operand, ast.Constant) and operand.value in PROVIDER_NAMES:
            return True
    return False


def test_no_product_module_outside_providers_branches_on_a_provider() -> None:
    providers = ROOT / "core" / "providers"
    found = [f"{_relative(path)}:{node.lineno}: {ast.unparse(node)}"
             for path in _product_files() if providers not in path.parents
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Compare) and _branches_on_a_provider(node)]
    assert not found, ("ask the provider's adapter (core/providers/base.py) or its "
                       "traits (core/providers/traits.py) instead:\n" + "\n".join(found))


def test_the_branch_check_sees_a_branch() -> None:
    """Not vacuous: the check names the comparisons it is meant to find."""
    for source in ("provider is Provider.CLAUDE", "name == 'codex'",
                   "Provider.CODEX in chosen"):
        [expression] = ast.parse(source).body
        assert isinstance(expression, ast.Expr) and isinstance(expression.value, ast.Compare)
        assert _branches_on_a_provider(expression.value)
    [plain] = ast.parse("provider is chosen").body
    assert isinstance(plain, ast.Expr) and isinstance(plain.value, ast.Compare)
    assert not _branches_on_a_provider(plain.value)


def test_the_simulators_have_one_product_user_the_demo() -> None:
    fake = ROOT / "core" / "providers" / "fake"
    users = sorted(_relative(path) for path in _product_files()
                   if fake not in path.parents and "core.providers.fake" in path.read_text())
    assert users == ["core/apps/demo.py"]


def test_every_sqlite_connection_is_opened_in_storage() -> None:
    """``sqlite3.connect`` only in ``storage/`` (issue 38.5): the hook path's lean reads
    go through ``storage.uri.open_uri``, so how a file is opened is decided in one layer."""
    import ast

    root = Path(__file__).resolve().parent.parent
    found = []
    for package in ("core", "navigator"):
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "connect" \
                        and isinstance(node.func.value, ast.Name) \
                        and node.func.value.id == "sqlite3":
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
                if isinstance(node, ast.ImportFrom) and node.module == "sqlite3" \
                        and any(alias.name == "connect" for alias in node.names):
                    found.append(f"{path.relative_to(root)}:{node.lineno} (import)")
    assert found == []
