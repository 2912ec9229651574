"""The navigator's boundaries: what it may import, and where its stylesheet comes from."""

from __future__ import annotations

import ast
from pathlib import Path

from navigator.app import stylesheet_path

ROOT = Path(__file__).resolve().parents[2]
NEVER_IN_NAVIGATOR = {"sqlite3", "aiosqlite", "libtmux"}
NEVER_IN_WIDGETS = NEVER_IN_NAVIGATOR | {"storage", "core.engine.engine", "core.tmux"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _hits(names: set[str], banned: set[str]) -> set[str]:
    return {n for n in names for b in banned if n == b or n.startswith(b + ".")}


def test_navigator_never_imports_sqlite_or_tmux() -> None:
    for path in (ROOT / "navigator").rglob("*.py"):
        assert not _hits(_imports(path), NEVER_IN_NAVIGATOR), path


def test_panels_and_dialogs_get_state_not_storage() -> None:
    for folder in ("widgets", "screens"):
        for path in (ROOT / "navigator" / folder).rglob("*.py"):
            assert not _hits(_imports(path), NEVER_IN_WIDGETS), path


def test_core_and_storage_never_import_textual() -> None:
    for package in ("core", "storage"):
        for path in (ROOT / package).rglob("*.py"):
            assert not _hits(_imports(path), {"textual"}), path


def test_stylesheet_is_the_canonical_one_and_ships_with_the_package() -> None:
    canonical = ROOT / "styles" / "switchboard.tcss"
    assert stylesheet_path() == canonical
    shipped = ROOT / "navigator" / "switchboard.tcss"  # package data for wheel installs
    assert shipped.read_bytes() == canonical.read_bytes()
